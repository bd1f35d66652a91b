! The flashcore Fortran module on host data: fp32 attention (GQA, causal with Lq /= Lk, LSE)
! against a plain-loop fp64 computation in this program, fp16 through integer(c_int16_t) bit
! patterns, and invalid input (wrong element kind, arrays too small, a bad field): an error
! naming the array or field, with the output untouched.
program test_fortran
  use, intrinsic :: iso_c_binding, only: c_float, c_int16_t, c_int64_t, c_loc
  use, intrinsic :: ieee_arithmetic, only: ieee_value, ieee_quiet_nan, ieee_is_nan
  use flashcore
  implicit none
  integer, parameter :: B = 2, HQ = 4, HKV = 2, LQ = 19, LK = 23, D = 16
  real(c_float), allocatable, target :: q(:,:,:,:), k(:,:,:,:), v(:,:,:,:), o(:,:,:,:), lse(:,:,:)
  real(c_float), allocatable :: small(:,:,:,:)
  integer(c_int16_t), allocatable :: q16(:,:,:,:), k16(:,:,:,:), v16(:,:,:,:), o16(:,:,:,:)
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
  call check(fc_last_backend() == 'reference-host', 'ran on reference-host, not ' // fc_last_backend())
  call naive(q, k, v, .true., ref_o, ref_lse)
  ! The reference's fp32 bound (README, Accuracy): |o - ref| <= 2e-5 + 1e-5 |ref|.
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

  call fc_finalize()
  print '(i0, a, i0, a)', passed, ' passed, ', failed, ' failed'
  if (failed > 0) stop 1

contains

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
