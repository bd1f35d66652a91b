! FlashCore for Fortran: fused scaled-dot-product attention, O = softmax(Q K^T scale + mask) V,
! through the C API (include/flashcore/flashcore.h) with iso_c_binding.
!
!   use flashcore
!   type(fc_problem) :: p
!   real(c_float), allocatable :: q(:,:,:,:), k(:,:,:,:), v(:,:,:,:), o(:,:,:,:), lse(:,:,:)
!   call fc_problem_init(p, batch, heads_q, heads_kv, seqlen_q, seqlen_k, head_dim, FC_F32, causal=.true.)
!   allocate(q(head_dim, heads_q, seqlen_q, batch), k(head_dim, heads_kv, seqlen_k, batch), ...)
!   if (fc_attention(p, q, k, v, o, lse) /= FC_OK) print *, fc_last_error()
!   print *, 'ran on ', fc_last_backend()
!
! Array order: Fortran is column-major, so an array declared (head_dim, heads, seq, batch) is the
! C API's contiguous (batch, seq, heads, head_dim) "BSHD" layout; the LSE is (seqlen_q, heads_q,
! batch). fp16 and bf16 data are integer(c_int16_t) arrays holding the bit patterns; fp8 (FC_E4M3)
! inputs integer(c_int8_t) arrays of e4m3 bytes, with p%descale_q/k/v and O an integer(c_int16_t)
! array of p%out_dtype (FC_F16 or FC_BF16; forward only). Other layouts
! set the strides of p (element strides, the head_dim stride is 1) and the pointer form
! fc_attention_ptr, which also takes device pointers (e.g. from CUDA Fortran or OpenACC's
! host_data use_device). Every call checks the arrays' element kind and size against the problem
! and fails with FC_ERROR_INVALID and a message naming the array, before any work.
!
! The backward pass (training): fc_attention_backward(p, q, k, v, o, lse, d_o, dq, dk, dv) from the
! forward call's inputs, its O and LSE (required) and d_o = dL/dO, computes dq, dk, dv (the shapes of
! q, k, v; dk and dv summed over each KV head's group); dsinks= (heads_q values) with p%sinks;
! p%deterministic = 1 for bitwise-reproducible gradients. fp32 or fp16/bf16 bits; not fp8, not paged
! K/V. fc_attention_backward_ptr takes pointers, as fc_attention_ptr.
!
! Sequences of different lengths (varlen, KV cache, paged; flashcore.h): set the fields of p after
! fc_problem_init and point cu_seqlens_q, seqlens_k, block_table, ... at integer(c_int32_t) arrays
! (c_loc; offsets and page indices 0-based, as in C; block_table declared (pages_per_seq, batch)).
! Packed Q and O are (head_dim, heads_q, total_q, 1) arrays, their LSE (total_q, heads_q, 1); paged K
! and V are pools (head_dim, heads_kv, page_size, num_pages) with p%k%batch = p%v%batch =
! page_size * heads_kv * head_dim (the element stride between pages).
module flashcore
  use, intrinsic :: iso_c_binding, only: c_int, c_int8_t, c_int16_t, c_int64_t, c_float, c_char, c_ptr, &
                                         c_null_ptr, c_null_char, c_loc, c_associated, c_f_pointer
  implicit none
  private

  ! fc_dtype, fc_location, fc_status
  integer(c_int), parameter, public :: FC_F32 = 0, FC_F16 = 1, FC_BF16 = 2, FC_E4M3 = 3
  integer(c_int), parameter, public :: FC_LOC_AUTO = 0, FC_LOC_HOST = 1, FC_LOC_DEVICE = 2
  integer(c_int), parameter, public :: FC_OK = 0, FC_ERROR_INVALID = 1, FC_ERROR_BACKEND = 2, FC_ERROR_INTERNAL = 3

  !> Element strides of one tensor (the head_dim stride is 1).
  type, bind(c), public :: fc_strides
    integer(c_int64_t) :: batch, seq, head
  end type

  !> The problem descriptor, field for field the C struct fc_problem.
  type, bind(c), public :: fc_problem
    integer(c_int) :: batch, heads_q, heads_kv, seqlen_q, seqlen_k, head_dim
    integer(c_int) :: dtype   ! FC_F32, FC_F16, FC_BF16 or FC_E4M3
    integer(c_int) :: causal  ! 0 or 1 (bottom-right aligned when seqlen_q /= seqlen_k)
    real(c_float) :: scale    ! 0: 1/sqrt(head_dim)
    type(fc_strides) :: q, k, v, o
    ! Variants (see flashcore.h); fc_problem_init sets none.
    integer(c_int) :: window                     ! 0: no sliding window; 1: window_left/right apply
    integer(c_int) :: window_left, window_right  ! keys left/right of the diagonal, -1 = unbounded
    real(c_float) :: softcap                     ! 0: none
    type(c_ptr) :: alibi_slopes, sinks           ! c_null_ptr, or heads_q c_float values (c_loc)
    ! Sequences of different lengths (see flashcore.h); fc_problem_init sets none. seqlen_q and
    ! seqlen_k are then bounds of every sequence's length.
    integer(c_int) :: total_q, total_k           ! > 0: Q/O (K/V) packed, split by cu_seqlens_q (_k)
    integer(c_int) :: page_size, num_pages, pages_per_seq  ! page_size > 0: paged K/V pools, block_table
    integer(c_int) :: trust_sequences            ! 0: device arrays are checked before any work; 1: trusted
    type(c_ptr) :: cu_seqlens_q, cu_seqlens_k    ! c_null_ptr, or c_loc of batch+1 integer(c_int32_t) offsets
    type(c_ptr) :: seqlens_k                     ! c_null_ptr, or c_loc of batch integer(c_int32_t) cache lengths
    type(c_ptr) :: block_table                   ! c_null_ptr, or c_loc of integer(c_int32_t) (pages_per_seq, batch)
    integer(c_int) :: deterministic              ! backward: 1 = bitwise-reproducible gradients; 0 = fastest
    ! FP8 inputs (dtype FC_E4M3; read only then): Q, K, V stand for descale_q/k/v times their e4m3 values
    ! (finite, > 0); O is of out_dtype (FC_F16 or FC_BF16). fc_problem_init sets 1, 1, 1, FC_BF16.
    real(c_float) :: descale_q, descale_k, descale_v
    integer(c_int) :: out_dtype
  end type

  public :: fc_problem_init, fc_attention, fc_attention_ptr, fc_attention_backward, fc_attention_backward_ptr, &
            fc_last_error, fc_last_backend, fc_initialize, fc_finalize, fc_version

  !> Attention on contiguous rank-4 arrays: real(c_float) for FC_F32, integer(c_int16_t) for
  !> FC_F16 / FC_BF16, integer(c_int8_t) Q, K, V and an integer(c_int16_t) O for FC_E4M3. lse
  !> (optional) is real(c_float), (seqlen_q, heads_q, batch).
  interface fc_attention
    module procedure fc_attention_f32, fc_attention_16bit, fc_attention_fp8
  end interface

  !> The backward pass on contiguous rank-4 arrays of one kind: real(c_float) for FC_F32,
  !> integer(c_int16_t) for FC_F16 / FC_BF16 (q, k, v, o, d_o, dq, dk, dv); lse real(c_float)
  !> (seqlen_q, heads_q, batch), required; dsinks (optional) real(c_float), heads_q values.
  interface fc_attention_backward
    module procedure fc_attention_backward_f32, fc_attention_backward_16bit
  end interface

  interface
    function c_attention_backward_sized(p, element_bytes, q, q_elems, k, k_elems, v, v_elems, o, o_elems, lse, &
                                        lse_elems, d_o, d_o_elems, dq, dq_elems, dk, dk_elems, dv, dv_elems, &
                                        dsinks, dsinks_elems, location, backend, stream) result(status) &
        bind(c, name="fc_attention_backward_sized")
      import :: fc_problem, c_int, c_int64_t, c_ptr
      type(fc_problem), intent(in) :: p
      integer(c_int), value :: element_bytes, location
      type(c_ptr), value :: q, k, v, o, lse, d_o, dq, dk, dv, dsinks, backend, stream
      integer(c_int64_t), value :: q_elems, k_elems, v_elems, o_elems, lse_elems, d_o_elems, dq_elems, dk_elems, &
                                   dv_elems, dsinks_elems
      integer(c_int) :: status
    end function

    subroutine c_problem_init(p, batch, heads_q, heads_kv, seqlen_q, seqlen_k, head_dim, dtype, causal) &
        bind(c, name="fc_problem_init")
      import :: fc_problem, c_int
      type(fc_problem), intent(out) :: p
      integer(c_int), value :: batch, heads_q, heads_kv, seqlen_q, seqlen_k, head_dim, dtype, causal
    end subroutine

    function c_attention_sized(p, element_bytes, q, q_elems, k, k_elems, v, v_elems, o, o_elems, lse, lse_elems, &
                               location, backend, stream) result(status) bind(c, name="fc_attention_sized")
      import :: fc_problem, c_int, c_int64_t, c_ptr
      type(fc_problem), intent(in) :: p
      integer(c_int), value :: element_bytes, location
      type(c_ptr), value :: q, k, v, o, lse, backend, stream
      integer(c_int64_t), value :: q_elems, k_elems, v_elems, o_elems, lse_elems
      integer(c_int) :: status
    end function

    function c_last_error() result(msg) bind(c, name="fc_last_error")
      import :: c_ptr
      type(c_ptr) :: msg
    end function
    function c_last_backend() result(name) bind(c, name="fc_last_backend")
      import :: c_ptr
      type(c_ptr) :: name
    end function
    function c_version() result(v) bind(c, name="fc_version")
      import :: c_ptr
      type(c_ptr) :: v
    end function
    function c_initialize() result(started) bind(c, name="fc_initialize")
      import :: c_int
      integer(c_int) :: started
    end function
    subroutine c_finalize() bind(c, name="fc_finalize")
    end subroutine
    function c_strlen(s) result(n) bind(c, name="strlen")
      import :: c_ptr, c_int64_t
      type(c_ptr), value :: s
      integer(c_int64_t) :: n
    end function
  end interface

contains

  !> A descriptor for contiguous BSHD tensors (Fortran arrays (head_dim, heads, seq, batch)).
  subroutine fc_problem_init(p, batch, heads_q, heads_kv, seqlen_q, seqlen_k, head_dim, dtype, causal)
    type(fc_problem), intent(out) :: p
    integer, intent(in) :: batch, heads_q, heads_kv, seqlen_q, seqlen_k, head_dim
    integer(c_int), intent(in) :: dtype
    logical, intent(in), optional :: causal
    integer(c_int) :: c
    c = 0
    if (present(causal)) then
      if (causal) c = 1
    end if
    call c_problem_init(p, int(batch, c_int), int(heads_q, c_int), int(heads_kv, c_int), int(seqlen_q, c_int), &
                        int(seqlen_k, c_int), int(head_dim, c_int), dtype, c)
  end subroutine

  function fc_attention_f32(p, q, k, v, o, lse, backend) result(status)
    type(fc_problem), intent(in) :: p
    real(c_float), intent(in), target, contiguous :: q(:,:,:,:), k(:,:,:,:), v(:,:,:,:)
    real(c_float), intent(inout), target, contiguous :: o(:,:,:,:)
    real(c_float), intent(inout), target, contiguous, optional :: lse(:,:,:)
    character(len=*), intent(in), optional :: backend
    integer(c_int) :: status
    type(c_ptr) :: lse_ptr
    integer(c_int64_t) :: lse_elems
    call lse_arg(lse, lse_ptr, lse_elems)
    status = call_sized(p, 4, c_loc(q), size(q, kind=c_int64_t), c_loc(k), size(k, kind=c_int64_t), c_loc(v), &
                        size(v, kind=c_int64_t), c_loc(o), size(o, kind=c_int64_t), lse_ptr, lse_elems, &
                        FC_LOC_HOST, backend, c_null_ptr)
  end function

  function fc_attention_16bit(p, q, k, v, o, lse, backend) result(status)
    type(fc_problem), intent(in) :: p
    integer(c_int16_t), intent(in), target, contiguous :: q(:,:,:,:), k(:,:,:,:), v(:,:,:,:)
    integer(c_int16_t), intent(inout), target, contiguous :: o(:,:,:,:)
    real(c_float), intent(inout), target, contiguous, optional :: lse(:,:,:)
    character(len=*), intent(in), optional :: backend
    integer(c_int) :: status
    type(c_ptr) :: lse_ptr
    integer(c_int64_t) :: lse_elems
    call lse_arg(lse, lse_ptr, lse_elems)
    status = call_sized(p, 2, c_loc(q), size(q, kind=c_int64_t), c_loc(k), size(k, kind=c_int64_t), c_loc(v), &
                        size(v, kind=c_int64_t), c_loc(o), size(o, kind=c_int64_t), lse_ptr, lse_elems, &
                        FC_LOC_HOST, backend, c_null_ptr)
  end function

  !> fp8 (FC_E4M3) inputs: e4m3 bytes in Q, K, V; O holds fp16 or bf16 bits (p%out_dtype).
  function fc_attention_fp8(p, q, k, v, o, lse, backend) result(status)
    type(fc_problem), intent(in) :: p
    integer(c_int8_t), intent(in), target, contiguous :: q(:,:,:,:), k(:,:,:,:), v(:,:,:,:)
    integer(c_int16_t), intent(inout), target, contiguous :: o(:,:,:,:)
    real(c_float), intent(inout), target, contiguous, optional :: lse(:,:,:)
    character(len=*), intent(in), optional :: backend
    integer(c_int) :: status
    type(c_ptr) :: lse_ptr
    integer(c_int64_t) :: lse_elems
    call lse_arg(lse, lse_ptr, lse_elems)
    status = call_sized(p, 1, c_loc(q), size(q, kind=c_int64_t), c_loc(k), size(k, kind=c_int64_t), c_loc(v), &
                        size(v, kind=c_int64_t), c_loc(o), size(o, kind=c_int64_t), lse_ptr, lse_elems, &
                        FC_LOC_HOST, backend, c_null_ptr)
  end function

  !> The optional LSE array as a pointer and a length (null and 0 when absent).
  subroutine lse_arg(lse, ptr, n)
    real(c_float), intent(inout), target, contiguous, optional :: lse(:,:,:)
    type(c_ptr), intent(out) :: ptr
    integer(c_int64_t), intent(out) :: n
    ptr = c_null_ptr
    n = 0
    if (present(lse)) then
      ptr = c_loc(lse)
      n = size(lse, kind=c_int64_t)
    end if
  end subroutine

  !> Attention on raw pointers (host or device memory, any strides set in p): element_bytes is 4
  !> for fp32, 2 for fp16/bf16, 1 for fp8 e4m3 (Q, K, V; O then holds 2-byte elements of
  !> p%out_dtype); *_elems the number of elements each buffer holds; location
  !> FC_LOC_AUTO (asks the CUDA runtime), FC_LOC_HOST or FC_LOC_DEVICE; stream a cudaStream_t.
  function fc_attention_ptr(p, element_bytes, q, q_elems, k, k_elems, v, v_elems, o, o_elems, lse, lse_elems, &
                            location, backend, stream) result(status)
    type(fc_problem), intent(in) :: p
    integer, intent(in) :: element_bytes
    type(c_ptr), intent(in) :: q, k, v, o
    integer(c_int64_t), intent(in) :: q_elems, k_elems, v_elems, o_elems
    type(c_ptr), intent(in), optional :: lse, stream
    integer(c_int64_t), intent(in), optional :: lse_elems
    integer(c_int), intent(in), optional :: location
    character(len=*), intent(in), optional :: backend
    integer(c_int) :: status
    type(c_ptr) :: lse_ptr, stream_ptr
    integer(c_int64_t) :: n_lse
    integer(c_int) :: loc
    call optional_buffer(lse, lse_elems, lse_ptr, n_lse)
    call pointer_options(location, stream, loc, stream_ptr)
    status = call_sized(p, element_bytes, q, q_elems, k, k_elems, v, v_elems, o, o_elems, lse_ptr, n_lse, loc, &
                        backend, stream_ptr)
  end function

  function call_sized(p, element_bytes, q, nq, k, nk, v, nv, o, no, lse, nlse, location, backend, stream) &
      result(status)
    type(fc_problem), intent(in) :: p
    integer, intent(in) :: element_bytes
    type(c_ptr), intent(in) :: q, k, v, o, lse, stream
    integer(c_int64_t), intent(in) :: nq, nk, nv, no, nlse
    integer(c_int), intent(in) :: location
    character(len=*), intent(in), optional :: backend
    integer(c_int) :: status
    character(kind=c_char, len=:), allocatable, target :: name
    type(c_ptr) :: name_ptr
    call backend_name(backend, name, name_ptr)
    status = c_attention_sized(p, int(element_bytes, c_int), q, nq, k, nk, v, nv, o, no, lse, nlse, location, &
                               name_ptr, stream)
  end function

  function fc_attention_backward_f32(p, q, k, v, o, lse, d_o, dq, dk, dv, dsinks, backend) result(status)
    type(fc_problem), intent(in) :: p
    real(c_float), intent(in), target, contiguous :: q(:,:,:,:), k(:,:,:,:), v(:,:,:,:), o(:,:,:,:), d_o(:,:,:,:)
    real(c_float), intent(in), target, contiguous :: lse(:,:,:)
    real(c_float), intent(inout), target, contiguous :: dq(:,:,:,:), dk(:,:,:,:), dv(:,:,:,:)
    real(c_float), intent(inout), target, contiguous, optional :: dsinks(:)
    character(len=*), intent(in), optional :: backend
    integer(c_int) :: status
    type(c_ptr) :: ds
    integer(c_int64_t) :: nds
    call dsinks_arg(dsinks, ds, nds)
    status = backward_sized(p, 4, c_loc(q), size(q, kind=c_int64_t), c_loc(k), size(k, kind=c_int64_t), &
                            c_loc(v), size(v, kind=c_int64_t), c_loc(o), size(o, kind=c_int64_t), c_loc(lse), &
                            size(lse, kind=c_int64_t), c_loc(d_o), size(d_o, kind=c_int64_t), c_loc(dq), &
                            size(dq, kind=c_int64_t), c_loc(dk), size(dk, kind=c_int64_t), c_loc(dv), &
                            size(dv, kind=c_int64_t), ds, nds, FC_LOC_HOST, backend, c_null_ptr)
  end function

  function fc_attention_backward_16bit(p, q, k, v, o, lse, d_o, dq, dk, dv, dsinks, backend) result(status)
    type(fc_problem), intent(in) :: p
    integer(c_int16_t), intent(in), target, contiguous :: q(:,:,:,:), k(:,:,:,:), v(:,:,:,:), o(:,:,:,:), &
                                                          d_o(:,:,:,:)
    real(c_float), intent(in), target, contiguous :: lse(:,:,:)
    integer(c_int16_t), intent(inout), target, contiguous :: dq(:,:,:,:), dk(:,:,:,:), dv(:,:,:,:)
    real(c_float), intent(inout), target, contiguous, optional :: dsinks(:)
    character(len=*), intent(in), optional :: backend
    integer(c_int) :: status
    type(c_ptr) :: ds
    integer(c_int64_t) :: nds
    call dsinks_arg(dsinks, ds, nds)
    status = backward_sized(p, 2, c_loc(q), size(q, kind=c_int64_t), c_loc(k), size(k, kind=c_int64_t), &
                            c_loc(v), size(v, kind=c_int64_t), c_loc(o), size(o, kind=c_int64_t), c_loc(lse), &
                            size(lse, kind=c_int64_t), c_loc(d_o), size(d_o, kind=c_int64_t), c_loc(dq), &
                            size(dq, kind=c_int64_t), c_loc(dk), size(dk, kind=c_int64_t), c_loc(dv), &
                            size(dv, kind=c_int64_t), ds, nds, FC_LOC_HOST, backend, c_null_ptr)
  end function

  !> The optional dsinks array as a pointer and a length (null and 0 when absent).
  subroutine dsinks_arg(dsinks, ptr, n)
    real(c_float), intent(inout), target, contiguous, optional :: dsinks(:)
    type(c_ptr), intent(out) :: ptr
    integer(c_int64_t), intent(out) :: n
    ptr = c_null_ptr
    n = 0
    if (present(dsinks)) then
      ptr = c_loc(dsinks)
      n = size(dsinks, kind=c_int64_t)
    end if
  end subroutine

  !> The backward pass on raw pointers (host or device memory, any strides set in p; the gradients
  !> have the strides of their tensors): element_bytes 4 (fp32) or 2 (fp16/bf16 bits), *_elems the
  !> number of elements each buffer holds, location and stream as fc_attention_ptr.
  function fc_attention_backward_ptr(p, element_bytes, q, q_elems, k, k_elems, v, v_elems, o, o_elems, lse, &
                                     lse_elems, d_o, d_o_elems, dq, dq_elems, dk, dk_elems, dv, dv_elems, dsinks, &
                                     dsinks_elems, location, backend, stream) result(status)
    type(fc_problem), intent(in) :: p
    integer, intent(in) :: element_bytes
    type(c_ptr), intent(in) :: q, k, v, o, lse, d_o, dq, dk, dv
    integer(c_int64_t), intent(in) :: q_elems, k_elems, v_elems, o_elems, lse_elems, d_o_elems, dq_elems, &
                                      dk_elems, dv_elems
    type(c_ptr), intent(in), optional :: dsinks, stream
    integer(c_int64_t), intent(in), optional :: dsinks_elems
    integer(c_int), intent(in), optional :: location
    character(len=*), intent(in), optional :: backend
    integer(c_int) :: status
    type(c_ptr) :: ds, stream_ptr
    integer(c_int64_t) :: nds
    integer(c_int) :: loc
    call optional_buffer(dsinks, dsinks_elems, ds, nds)
    call pointer_options(location, stream, loc, stream_ptr)
    status = backward_sized(p, element_bytes, q, q_elems, k, k_elems, v, v_elems, o, o_elems, lse, lse_elems, d_o, &
                            d_o_elems, dq, dq_elems, dk, dk_elems, dv, dv_elems, ds, nds, loc, backend, stream_ptr)
  end function

  function backward_sized(p, element_bytes, q, nq, k, nk, v, nv, o, no, lse, nlse, d_o, ndo, dq, ndq, dk, ndk, dv, &
                          ndv, dsinks, nds, location, backend, stream) result(status)
    type(fc_problem), intent(in) :: p
    integer, intent(in) :: element_bytes
    type(c_ptr), intent(in) :: q, k, v, o, lse, d_o, dq, dk, dv, dsinks, stream
    integer(c_int64_t), intent(in) :: nq, nk, nv, no, nlse, ndo, ndq, ndk, ndv, nds
    integer(c_int), intent(in) :: location
    character(len=*), intent(in), optional :: backend
    integer(c_int) :: status
    character(kind=c_char, len=:), allocatable, target :: name
    type(c_ptr) :: name_ptr
    call backend_name(backend, name, name_ptr)
    status = c_attention_backward_sized(p, int(element_bytes, c_int), q, nq, k, nk, v, nv, o, no, lse, nlse, d_o, ndo, &
                                        dq, ndq, dk, ndk, dv, ndv, dsinks, nds, location, name_ptr, stream)
  end function

  !> The optional arguments of the pointer forms: location (FC_LOC_AUTO when absent), stream (null).
  subroutine pointer_options(location, stream, loc, stream_ptr)
    integer(c_int), intent(in), optional :: location
    type(c_ptr), intent(in), optional :: stream
    integer(c_int), intent(out) :: loc
    type(c_ptr), intent(out) :: stream_ptr
    loc = FC_LOC_AUTO
    stream_ptr = c_null_ptr
    if (present(location)) loc = location
    if (present(stream)) stream_ptr = stream
  end subroutine

  !> An optional buffer of the pointer forms (lse, dsinks) and its length: null and 0 when absent.
  subroutine optional_buffer(buf, elems, ptr, n)
    type(c_ptr), intent(in), optional :: buf
    integer(c_int64_t), intent(in), optional :: elems
    type(c_ptr), intent(out) :: ptr
    integer(c_int64_t), intent(out) :: n
    ptr = c_null_ptr
    n = 0
    if (present(buf)) ptr = buf
    if (present(elems)) n = elems
  end subroutine

  !> The optional backend name as a C string: name holds it, ptr points at it (null when absent).
  subroutine backend_name(backend, name, ptr)
    character(len=*), intent(in), optional :: backend
    character(kind=c_char, len=:), allocatable, target, intent(inout) :: name
    type(c_ptr), intent(out) :: ptr
    ptr = c_null_ptr
    if (present(backend)) then
      name = trim(backend) // c_null_char
      ptr = c_loc(name)
    end if
  end subroutine

  !> The message of the last failed call on this thread ("" when none).
  function fc_last_error() result(msg)
    character(len=:), allocatable :: msg
    msg = from_c(c_last_error())
  end function

  !> The backend that ran the last successful call on this thread.
  function fc_last_backend() result(name)
    character(len=:), allocatable :: name
    name = from_c(c_last_backend())
  end function

  function fc_version() result(v)
    character(len=:), allocatable :: v
    v = from_c(c_version())
  end function

  !> Initializes Kokkos if nobody has (returns .true. when this call did); fc_finalize undoes
  !> only what fc_initialize started.
  function fc_initialize() result(started)
    logical :: started
    started = c_initialize() == 1
  end function

  subroutine fc_finalize()
    call c_finalize()
  end subroutine

  function from_c(s) result(f)
    type(c_ptr), intent(in) :: s
    character(len=:), allocatable :: f
    character(kind=c_char), pointer :: chars(:)
    integer(c_int64_t) :: n, i
    if (.not. c_associated(s)) then
      f = ''
      return
    end if
    n = c_strlen(s)
    call c_f_pointer(s, chars, [n])
    allocate(character(len=n) :: f)
    do i = 1, n
      f(i:i) = chars(i)
    end do
  end function

end module flashcore
