! The README Fortran example as a program: fp32, B=1, 4 query heads over 2 KV heads, causal.
program consumer_f
  use, intrinsic :: iso_c_binding, only: c_float
  use flashcore
  implicit none
  integer, parameter :: B = 1, HQ = 4, HKV = 2, LQ = 33, LK = 40, D = 32
  ! Fortran (head_dim, heads, seq, batch) is the C API's contiguous (batch, seq, heads, head_dim).
  real(c_float) :: q(D, HQ, LQ, B), k(D, HKV, LK, B), v(D, HKV, LK, B), o(D, HQ, LQ, B), lse(LQ, HQ, B)
  type(fc_problem) :: p
  logical :: started

  started = fc_initialize()  ! initializes Kokkos unless the application already has
  call random_number(q)
  call random_number(k)
  call random_number(v)
  o = -1
  call fc_problem_init(p, B, HQ, HKV, LQ, LK, D, FC_F32, causal=.true.)
  if (fc_attention(p, q, k, v, o, lse) /= FC_OK) then
    print '(a)', 'consumer_f: ' // fc_last_error()
    stop 1
  end if
  ! Each output is a convex combination of V values in [0, 1).
  if (any(o < 0) .or. any(o > 1)) stop 2
  print '(a)', 'consumer_f: ok (' // fc_last_backend() // ')'
  call fc_finalize()
end program consumer_f
