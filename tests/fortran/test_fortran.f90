! The flashcore Fortran module on host data: fp32 attention (GQA, causal with Lq /= Lk, LSE)
! against a plain-loop fp64 computation in this program, fp16 through integer(c_int16_t) bit
! patterns, fp8 e4m3 inputs through integer(c_int8_t) bytes (descales, bf16 O), a batch of sequences
! of different lengths (packed Q, cache lengths, paged K/V) against plain loops too, and invalid input (wrong element kind, arrays too small, a bad field or sequence
! array): an error naming the array or field, with the output untouched; the backward pass (fp32 dQ,
! dK, dV against plain fp64 loops, a gradient buffer too small).
program test_fortran
  use, intrinsic :: iso_c_binding, only: c_float, c_int8_t, c_int16_t, c_int32_t, c_int64_t, c_loc
  use, intrinsic :: ieee_arithmetic, only: ieee_value, ieee_quiet_nan, ieee_is_nan
  use flashcore
  implicit none
  integer, parameter :: B = 2, HQ = 4, HKV = 2, LQ = 19, LK = 23, D = 16
  real(c_float), allocatable, target :: q(:,:,:,:), k(:,:,:,:), v(:,:,:,:), o(:,:,:,:), lse(:,:,:)
  real(c_float), allocatable :: small(:,:,:,:)
  integer(c_int16_t), allocatable :: q16(:,:,:,:), k16(:,:,:,:), v16(:,:,:,:), o16(:,:,:,:)
  integer(c_int8_t), allocatable :: q8(:,:,:,:), k8(:,:,:,:), v8(:,:,:,:)
  real(8), allocatable :: ref_o(:,:,:,:), ref_lse(:,:,:)
  type(fc_problem) :: p, bad
  integer :: failed, passed, status
  real(c_float) :: nan
  logical :: started

  failed = 0
  passed = 0
  nan = ieee_value(nan, ieee_quiet_nan)
  started = fc_initialize()
  call check(started, 'fc_initialize starts Kokkos in a program that has not')
  call check(len(fc_version()) > 0, 'fc_version is not empty')

  ! fp32, GQA 4:2, causal with Lq < Lk (bottom-right aligned), with LSE.
  allocate(q(D, HQ, LQ, B), k(D, HKV, LK, B), v(D, HKV, LK, B), o(D, HQ, LQ, B), lse(LQ, HQ, B))
  call fill(q, 1)
  call fill(k, 2)
  call fill(v, 3)
  o = nan
  lse = nan
  call fc_problem_init(p, B, HQ, HKV, LQ, LK, D, FC_F32, causal=.true.)
  status = fc_attention(p, q, k, v, o, lse)
  call check(status == FC_OK, 'fp32 attention returns FC_OK: ' // fc_last_error())
  call check(fc_last_backend() == 'portable-host', 'ran on portable-host (host data, automatic), not ' // fc_last_backend())
  call naive(q, k, v, .true., ref_o, ref_lse)
  ! The reference's fp32 bound (README, Accuracy), met by the portable tier: |o - ref| <= 2e-5 + 1e-5 |ref|.
  call check(all(abs(o - ref_o) <= 2e-5 + 1e-5 * abs(ref_o)), 'fp32 O matches the fp64 loops')
  call check(all(abs(lse - ref_lse) <= 2e-5 + 1e-5 * abs(ref_lse)), 'fp32 LSE matches the fp64 loops')
  print '(a, es10.3)', 'test_fortran: fp32 max |O - fp64| = ', maxval(abs(o - ref_o))

  ! fp16 bits: K = 0 makes the softmax uniform over the visible keys, V = (j mod 4) / 4 is exact in
  ! fp16, so O(d, h, i, b) = the mean of V over the keys row i sees; non-causal here.
  allocate(q16(D, HQ, LQ, B), k16(D, HKV, LK, B), v16(D, HKV, LK, B), o16(D, HQ, LQ, B))
  call fill16(q16, k16, v16)
  o16 = -1_c_int16_t
  call fc_problem_init(p, B, HQ, HKV, LQ, LK, D, FC_F16)
  status = fc_attention(p, q16, k16, v16, o16)
  call check(status == FC_OK, 'fp16 attention returns FC_OK: ' // fc_last_error())
  call check(all(abs(half_to_real(o16) - mean_v()) <= 1e-3), 'fp16 O is the mean of V')

  ! fp8 e4m3 bytes (FC_E4M3): K = 0 makes the softmax uniform, V = (j mod 4) / 4 is exact in e4m3 and
  ! descale_v = 2 doubles it, so O (bf16 bits: the default out_dtype) = 2 x the mean of V. Invalid
  ! fp8 fields first: an error naming the field, O untouched.
  allocate(q8(D, HQ, LQ, B), k8(D, HKV, LK, B), v8(D, HKV, LK, B))
  call fill8(q8, k8, v8)
  call fc_problem_init(p, B, HQ, HKV, LQ, LK, D, FC_E4M3)
  call check(p%out_dtype == FC_BF16 .and. p%descale_q == 1 .and. p%descale_k == 1 .and. p%descale_v == 1, &
             'fc_problem_init sets out_dtype FC_BF16 and descales 1')
  p%descale_q = 3
  p%descale_v = 2
  o16 = -1_c_int16_t
  bad = p
  bad%out_dtype = FC_F32
  status = fc_attention(bad, q8, k8, v8, o16)
  call expect_error(status, 'out_dtype', 'out_dtype FC_F32 for fp8 inputs')
  bad = p
  bad%descale_k = 0
  status = fc_attention(bad, q8, k8, v8, o16)
  call expect_error(status, 'descale_k 0', 'descale_k = 0')
  call check(all(o16 == -1_c_int16_t), 'o untouched by the failed fp8 calls')
  status = fc_attention(p, q8, k8, v8, o16)
  call check(status == FC_OK, 'fp8 attention returns FC_OK: ' // fc_last_error())
  call check(all(abs(bf16_to_real(o16) - 2 * mean_v()) <= 2 * mean_v() / 256), 'fp8 O (bf16) is twice the mean of V')

  ! Invalid input: an error naming the array or field; the output keeps its poison.
  o = nan
  call fc_problem_init(p, B, HQ, HKV, LQ, LK, D, FC_F16)
  status = fc_attention(p, q, k, v, o)
  call expect_error(status, 'dtype', 'fp32 arrays for an fp16 problem')
  call fc_problem_init(p, B, HQ, HKV, LQ, LK, D, FC_F32)
  allocate(small(D, HKV, LK - 1, B))
  small = 0
  status = fc_attention(p, q, small, v, o)
  call expect_error(status, 'k:', 'a K array one row short')
  bad = p
  bad%head_dim = 0
  status = fc_attention(bad, q, k, v, o)
  call expect_error(status, 'head_dim', 'head_dim = 0')
  bad = p
  bad%causal = 2
  status = fc_attention(bad, q, k, v, o)
  call expect_error(status, 'causal', 'causal = 2')
  status = fc_attention(p, q, k, v, o, backend='no-such-backend')
  call check(status == FC_ERROR_BACKEND, 'an unknown backend is FC_ERROR_BACKEND')
  call check(index(fc_last_error(), 'no-such-backend') > 0, 'the message names the backend: ' // fc_last_error())
  call check(all(ieee_is_nan(o)), 'o untouched by the failed calls')

  ! The pointer form, on the same fp32 data: same result.
  o = nan
  status = fc_attention_ptr(p, 4, c_loc(q), size(q, kind=c_int64_t), c_loc(k), size(k, kind=c_int64_t), &
                            c_loc(v), size(v, kind=c_int64_t), c_loc(o), size(o, kind=c_int64_t), location=FC_LOC_HOST)
  call naive(q, k, v, .false., ref_o, ref_lse)
  call check(status == FC_OK, 'fc_attention_ptr returns FC_OK: ' // fc_last_error())
  call check(all(abs(o - ref_o) <= 2e-5 + 1e-5 * abs(ref_o)), 'fc_attention_ptr O matches the fp64 loops')

  call test_paged_varlen()
  call test_backward()

  call fc_finalize()
  print '(i0, a, i0, a)', passed, ' passed, ', failed, ' failed'
  if (failed > 0) stop 1

contains

  ! A decode-like batch: four sequences with 3, 0, 5 and 2 queries packed into Q and O (varlen Q),
  ! 20, 7, 33 and 0 cached keys (seqlens_k) in pools of 16-row pages reached through a shuffled block
  ! table (paged K/V); causal (each sequence's own bottom-right diagonal), GQA 4:2, fp32, with LSE.
  subroutine test_paged_varlen()
    integer, parameter :: NB = 4, PS = 16, NP = 12, PPS = 3, TQ = 10, MAXQ = 5, MAXK = PPS * PS
    integer(c_int32_t), target :: cuq(NB + 1), lens(NB), table(PPS, NB), bad_table(PPS, NB)
    real(c_float), allocatable, target :: pq(:,:,:,:), pk(:,:,:,:), pv(:,:,:,:), po(:,:,:,:), plse(:,:,:)
    real(8), allocatable :: want_o(:,:,:,:), want_lse(:,:,:)
    type(fc_problem) :: s, bad
    cuq = [0, 3, 3, 8, 10]
    lens = [20, 7, 33, 0]
    table = reshape([7, 2, 11, 0, 9, 4, 5, 10, 1, 3, 8, 6], [PPS, NB])  ! every page once, 0-based
    allocate(pq(D, HQ, TQ, 1), po(D, HQ, TQ, 1), plse(TQ, HQ, 1), pk(D, HKV, PS, NP), pv(D, HKV, PS, NP))
    call fill(pq, 4)
    call fill(pk, 5)
    call fill(pv, 6)
    po = nan
    plse = nan
    call fc_problem_init(s, NB, HQ, HKV, MAXQ, MAXK, D, FC_F32, causal=.true.)
    s%total_q = TQ
    s%page_size = PS
    s%num_pages = NP
    s%pages_per_seq = PPS
    s%k%batch = PS * HKV * D  ! element stride between pages of the pools
    s%v%batch = PS * HKV * D
    s%cu_seqlens_q = c_loc(cuq)
    s%seqlens_k = c_loc(lens)
    s%block_table = c_loc(table)

    ! Invalid sequence input first: an error naming the array; the outputs keep their poison.
    bad = s
    bad_table = table
    bad_table(2, 3) = NP  ! a page of sequence 2 in use (33 keys: 3 pages) outside the pool
    bad%block_table = c_loc(bad_table)
    status = fc_attention(bad, pq, pk, pv, po, plse)
    call expect_error(status, 'block_table', 'a block-table entry outside the pool')
    bad = s
    bad%total_q = TQ + 1  ! cu_seqlens_q ends at 10, and the arrays hold 10 rows
    status = fc_attention(bad, pq, pk, pv, po, plse)
    call check(status == FC_ERROR_INVALID, 'total_q one beyond Q is FC_ERROR_INVALID')
    call check(index(fc_last_error(), 'q:') > 0 .or. index(fc_last_error(), 'cu_seqlens_q') > 0, &
               'total_q one beyond Q: the message names q or cu_seqlens_q: ' // fc_last_error())
    bad = s
    bad%num_pages = NP + 1  ! the pools hold NP pages
    status = fc_attention(bad, pq, pk, pv, po, plse)
    call expect_error(status, 'k:', 'num_pages one beyond the K pool')
    bad = s
    bad%trust_sequences = 2
    status = fc_attention(bad, pq, pk, pv, po, plse)
    call expect_error(status, 'trust_sequences', 'trust_sequences = 2')
    bad = s
    bad%deterministic = 2
    status = fc_attention(bad, pq, pk, pv, po, plse)
    call expect_error(status, 'deterministic', 'deterministic = 2 (the field after block_table: the layouts agree)')
    call check(all(ieee_is_nan(po)) .and. all(ieee_is_nan(plse)), 'packed o and lse untouched by the failed calls')

    status = fc_attention(s, pq, pk, pv, po, plse)
    call check(status == FC_OK, 'paged varlen attention returns FC_OK: ' // fc_last_error())
    call naive_paged(pq, pk, pv, cuq, lens, table, PS, want_o, want_lse)
    call check(all(abs(po - want_o) <= 2e-5 + 1e-5 * abs(want_o)), 'paged varlen O matches the fp64 loops')
    ! Rows of sequence 3 see no key (0 cached): O = 0 and LSE = -inf.
    call check(all(po(:, :, 9:10, 1) == 0), 'rows that see no key give O = 0')
    call check(all(plse(9:10, :, 1) < -huge(1.0_c_float)), 'rows that see no key give LSE = -inf')
    call check(all(abs(plse(1:8, :, 1) - want_lse(1:8, :, 1)) <= 2e-5 + 1e-5 * abs(want_lse(1:8, :, 1))), &
               'paged varlen LSE matches the fp64 loops')
    print '(a, es10.3)', 'test_fortran: paged varlen max |O - fp64| = ', maxval(abs(po - want_o))
  end subroutine

  ! The same in fp64 loops: sequence b's query i (packed row cuq(b) + i) sees its keys
  ! j <= i + lens(b) - Lq_b; key j is row mod(j, ps) of page table(j / ps + 1, b) (0-based pages).
  subroutine naive_paged(q, k, v, cuq, lens, table, ps, o, lse)
    real(c_float), intent(in) :: q(:,:,:,:), k(:,:,:,:), v(:,:,:,:)
    integer(c_int32_t), intent(in) :: cuq(:), lens(:), table(:,:)
    integer, intent(in) :: ps
    real(8), allocatable, intent(out) :: o(:,:,:,:), lse(:,:,:)
    real(8), allocatable :: s(:)
    real(8) :: m, l, scale
    integer :: ib, ih, i, j, hk, last, row, nq, page
    allocate(o(size(q, 1), size(q, 2), size(q, 3), 1), lse(size(q, 3), size(q, 2), 1), s(size(table, 1) * ps))
    scale = 1d0 / sqrt(real(D, 8))
    o = 0
    lse = -huge(1d0)
    do ib = 1, size(lens)
      nq = cuq(ib + 1) - cuq(ib)
      do i = 0, nq - 1
        row = cuq(ib) + i + 1
        last = min(lens(ib) - 1, i + lens(ib) - nq)  ! 0-based last visible key
        if (last < 0) cycle
        do ih = 1, HQ
          hk = (ih - 1) / (HQ / HKV) + 1
          do j = 0, last
            page = table(j / ps + 1, ib) + 1
            s(j + 1) = scale * sum(real(q(:, ih, row, 1), 8) * real(k(:, hk, mod(j, ps) + 1, page), 8))
          end do
          m = maxval(s(1:last + 1))
          l = sum(exp(s(1:last + 1) - m))
          do j = 0, last
            page = table(j / ps + 1, ib) + 1
            o(:, ih, row, 1) = o(:, ih, row, 1) + exp(s(j + 1) - m) / l * real(v(:, hk, mod(j, ps) + 1, page), 8)
          end do
          lse(row, ih, 1) = m + log(l)
        end do
      end do
    end do
  end subroutine

  ! The backward pass: fp32, GQA 4:2, causal with Lq < Lk, from the forward's O and LSE; dQ, dK, dV
  ! (poisoned with NaN first) against plain fp64 loops, with the README's bound per gradient tensor:
  ! |g - ref| <= atol + rtol |ref| + rtol max|ref| (fp32: atol 2e-5, rtol 1e-5). Then a dq buffer one
  ! element short: an error naming dq, before any work (dk untouched).
  subroutine test_backward()
    real(c_float), allocatable, target :: bo(:,:,:,:), blse(:,:,:), d_o(:,:,:,:), dq(:,:,:,:), dk(:,:,:,:), &
                                          dv(:,:,:,:), short_dq(:,:,:,:)
    real(8), allocatable :: gq(:,:,:,:), gk(:,:,:,:), gv(:,:,:,:)
    type(fc_problem) :: bp
    integer :: st
    allocate(bo(D, HQ, LQ, B), blse(LQ, HQ, B), d_o(D, HQ, LQ, B), dq(D, HQ, LQ, B), dk(D, HKV, LK, B), &
             dv(D, HKV, LK, B), short_dq(D, HQ, LQ, B))
    call fill(d_o, 4)
    call fc_problem_init(bp, B, HQ, HKV, LQ, LK, D, FC_F32, causal=.true.)
    st = fc_attention(bp, q, k, v, bo, blse)
    call check(st == FC_OK, 'forward before the backward returns FC_OK: ' // fc_last_error())
    dq = nan
    dk = nan
    dv = nan
    st = fc_attention_backward(bp, q, k, v, bo, blse, d_o, dq, dk, dv)
    call check(st == FC_OK, 'fp32 backward returns FC_OK: ' // fc_last_error())
    call check(len(fc_last_backend()) > 0, 'the backward names its backend')
    call naive_backward(q, k, v, d_o, gq, gk, gv)
    call check(all(abs(dq - gq) <= 2e-5 + 1e-5 * abs(gq) + 1e-5 * maxval(abs(gq))), 'fp32 dQ matches the fp64 loops')
    call check(all(abs(dk - gk) <= 2e-5 + 1e-5 * abs(gk) + 1e-5 * maxval(abs(gk))), 'fp32 dK matches the fp64 loops')
    call check(all(abs(dv - gv) <= 2e-5 + 1e-5 * abs(gv) + 1e-5 * maxval(abs(gv))), 'fp32 dV matches the fp64 loops')
    print '(a, 3es10.3, 2a)', 'test_fortran: backward max |dQ, dK, dV - fp64| = ', maxval(abs(dq - gq)), &
      maxval(abs(dk - gk)), maxval(abs(dv - gv)), ' on ', fc_last_backend()

    ! Too small a dq (the pointer form, one element short): FC_ERROR_INVALID naming dq, nothing written.
    dk = nan
    short_dq = nan
    st = fc_attention_backward_ptr(bp, 4, c_loc(q), size(q, kind=c_int64_t), c_loc(k), size(k, kind=c_int64_t), &
                                   c_loc(v), size(v, kind=c_int64_t), c_loc(bo), size(bo, kind=c_int64_t), c_loc(blse), &
                                   size(blse, kind=c_int64_t), c_loc(d_o), size(d_o, kind=c_int64_t), c_loc(short_dq), &
                                   size(short_dq, kind=c_int64_t) - 1, c_loc(dk), size(dk, kind=c_int64_t), c_loc(dv), &
                                   size(dv, kind=c_int64_t), location=FC_LOC_HOST)
    call expect_error(st, 'dq', 'a dq buffer one element short')
    call check(all(ieee_is_nan(dk)) .and. all(ieee_is_nan(short_dq)), 'dq and dk untouched by the failed call')
    ! fp16 bits through the generic interface: the dtype's element size is checked (fp32 data, FC_F16).
    bp%dtype = FC_F16
    st = fc_attention_backward(bp, q, k, v, bo, blse, d_o, dq, dk, dv)
    call expect_error(st, 'dtype', 'fp32 arrays for an FC_F16 backward')
  end subroutine

  ! dQ, dK, dV in fp64 with plain loops (causal, bottom-right; GQA as naive): P = exp(s - lse),
  ! dP = dO . v, delta = sum_j P dP, dS = P (dP - delta); dQ = scale dS K, dK = scale dS^T Q, dV = P^T dO.
  subroutine naive_backward(q, k, v, d_o, gq, gk, gv)
    real(c_float), intent(in) :: q(:,:,:,:), k(:,:,:,:), v(:,:,:,:), d_o(:,:,:,:)
    real(8), allocatable, intent(out) :: gq(:,:,:,:), gk(:,:,:,:), gv(:,:,:,:)
    real(8) :: s(LK), pr(LK), dp(LK), m, l, scale, delta
    integer :: ib, ih, i, j, hk, last
    allocate(gq(D, HQ, LQ, B), gk(D, HKV, LK, B), gv(D, HKV, LK, B))
    gq = 0
    gk = 0
    gv = 0
    scale = 1d0 / sqrt(real(D, 8))
    do ib = 1, B
      do ih = 1, HQ
        hk = (ih - 1) / (HQ / HKV) + 1
        do i = 1, LQ
          last = min(LK, i + LK - LQ)
          do j = 1, last
            s(j) = scale * sum(real(q(:, ih, i, ib), 8) * real(k(:, hk, j, ib), 8))
            dp(j) = sum(real(d_o(:, ih, i, ib), 8) * real(v(:, hk, j, ib), 8))
          end do
          m = maxval(s(1:last))
          l = sum(exp(s(1:last) - m))
          pr(1:last) = exp(s(1:last) - m) / l
          delta = sum(pr(1:last) * dp(1:last))
          do j = 1, last
            gq(:, ih, i, ib) = gq(:, ih, i, ib) + scale * pr(j) * (dp(j) - delta) * real(k(:, hk, j, ib), 8)
            gk(:, hk, j, ib) = gk(:, hk, j, ib) + scale * pr(j) * (dp(j) - delta) * real(q(:, ih, i, ib), 8)
            gv(:, hk, j, ib) = gv(:, hk, j, ib) + pr(j) * real(d_o(:, ih, i, ib), 8)
          end do
        end do
      end do
    end do
  end subroutine

  subroutine check(ok, what)
    logical, intent(in) :: ok
    character(len=*), intent(in) :: what
    if (ok) then
      passed = passed + 1
    else
      failed = failed + 1
      print '(a)', 'FAILED: ' // what
    end if
  end subroutine

  subroutine expect_error(status, text, what)
    integer, intent(in) :: status
    character(len=*), intent(in) :: text, what
    call check(status == FC_ERROR_INVALID, what // ' is FC_ERROR_INVALID')
    call check(index(fc_last_error(), text) > 0, what // ': the message names ' // text // ': ' // fc_last_error())
  end subroutine

  ! Deterministic values in [-1, 1) from a linear congruential sequence.
  subroutine fill(a, seed)
    real(c_float), intent(out) :: a(:,:,:,:)
    integer, intent(in) :: seed
    integer(8) :: s
    integer :: i1, i2, i3, i4
    s = 12345 + 7919 * seed
    do i4 = 1, size(a, 4)
      do i3 = 1, size(a, 3)
        do i2 = 1, size(a, 2)
          do i1 = 1, size(a, 1)
            s = mod(s * 1103515245_8 + 12345_8, 2147483648_8)
            a(i1, i2, i3, i4) = real(s, c_float) / 1073741824.0 - 1.0
          end do
        end do
      end do
    end do
  end subroutine

  ! O and LSE in fp64 with plain loops: query head h uses key head (h-1)/(HQ/HKV)+1; row i sees
  ! key j when j <= i + LK - LQ (causal, bottom-right aligned).
  subroutine naive(q, k, v, causal, o, lse)
    real(c_float), intent(in) :: q(:,:,:,:), k(:,:,:,:), v(:,:,:,:)
    logical, intent(in) :: causal
    real(8), allocatable, intent(out) :: o(:,:,:,:), lse(:,:,:)
    real(8) :: s(LK), m, l, scale
    integer :: ib, ih, i, j, hk, last
    allocate(o(D, HQ, LQ, B), lse(LQ, HQ, B))
    scale = 1d0 / sqrt(real(D, 8))
    do ib = 1, B
      do ih = 1, HQ
        hk = (ih - 1) / (HQ / HKV) + 1
        do i = 1, LQ
          last = LK
          if (causal) last = min(LK, i + LK - LQ)
          do j = 1, last
            s(j) = scale * sum(real(q(:, ih, i, ib), 8) * real(k(:, hk, j, ib), 8))
          end do
          m = maxval(s(1:last))
          l = sum(exp(s(1:last) - m))
          o(:, ih, i, ib) = 0
          do j = 1, last
            o(:, ih, i, ib) = o(:, ih, i, ib) + exp(s(j) - m) / l * real(v(:, hk, j, ib), 8)
          end do
          lse(i, ih, ib) = m + log(l)
        end do
      end do
    end do
  end subroutine

  subroutine fill16(q, k, v)
    integer(c_int16_t), intent(out) :: q(:,:,:,:), k(:,:,:,:), v(:,:,:,:)
    integer :: j
    q = int(z'3C00', c_int16_t)  ! 1.0
    k = 0_c_int16_t              ! 0.0
    do j = 1, size(v, 3)
      ! 0, 0.25, 0.5, 0.75 as fp16 bits
      select case (mod(j - 1, 4))
      case (0)
        v(:, :, j, :) = 0_c_int16_t
      case (1)
        v(:, :, j, :) = int(z'3400', c_int16_t)
      case (2)
        v(:, :, j, :) = int(z'3800', c_int16_t)
      case default
        v(:, :, j, :) = int(z'3A00', c_int16_t)
      end select
    end do
  end subroutine

  ! e4m3 bytes: Q = 1, K = 0, V = 0, 0.25, 0.5, 0.75 by key (j - 1) mod 4.
  subroutine fill8(q, k, v)
    integer(c_int8_t), intent(out) :: q(:,:,:,:), k(:,:,:,:), v(:,:,:,:)
    integer :: j
    q = int(z'38', c_int8_t)  ! 1.0
    k = 0_c_int8_t
    do j = 1, size(v, 3)
      select case (mod(j - 1, 4))
      case (0)
        v(:, :, j, :) = 0_c_int8_t
      case (1)
        v(:, :, j, :) = int(z'28', c_int8_t)  ! 0.25
      case (2)
        v(:, :, j, :) = int(z'30', c_int8_t)  ! 0.5
      case default
        v(:, :, j, :) = int(z'34', c_int8_t)  ! 0.75
      end select
    end do
  end subroutine

  ! bf16 bits to real (the upper half of an fp32).
  elemental function bf16_to_real(h) result(x)
    integer(c_int16_t), intent(in) :: h
    real(8) :: x
    x = real(transfer(ishft(iand(int(h), 65535), 16), 1.0_c_float), 8)
  end function

  function mean_v() result(m)
    real(8) :: m
    integer :: j
    m = 0
    do j = 1, LK
      m = m + mod(j - 1, 4) * 0.25d0
    end do
    m = m / LK
  end function

  ! fp16 bits to real for normal numbers and zero (what this test produces); NaN otherwise.
  elemental function half_to_real(h) result(x)
    integer(c_int16_t), intent(in) :: h
    real(8) :: x
    integer :: bits, e, f
    bits = iand(int(h), 65535)
    e = iand(ishft(bits, -10), 31)
    f = iand(bits, 1023)
    if (e == 0 .and. f == 0) then
      x = 0
    else if (e == 0 .or. e == 31) then
      x = huge(x)
    else
      x = (1d0 + f / 1024d0) * 2d0**(e - 15)
    end if
    if (btest(bits, 15)) x = -x
  end function

end program test_fortran
