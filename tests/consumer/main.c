/* The C API from C: fp32, MQA, non-causal. */
#include <flashcore/flashcore.h>

#include <math.h>
#include <stdio.h>

int main(void) {
  static float q[1 * 7 * 4 * 16], k[1 * 9 * 1 * 16], v[1 * 9 * 1 * 16], o[1 * 7 * 4 * 16];
  fc_problem p;
  fc_initialize();
  fc_problem_init(&p, 1, 4, 1, 7, 9, 16, FC_F32, 0);
  for (int i = 0; i < (int)(sizeof q / sizeof q[0]); ++i) q[i] = (float)((i % 13) - 6) / 7.0f, o[i] = NAN;
  for (int i = 0; i < (int)(sizeof k / sizeof k[0]); ++i) k[i] = (float)((i % 5) - 2) / 3.0f, v[i] = (float)(i % 11) / 10.0f;
  if (fc_attention(&p, q, k, v, o, NULL, FC_LOC_AUTO, NULL, NULL) != FC_OK) {
    fprintf(stderr, "consumer_c: %s\n", fc_last_error());
    return 1;
  }
  for (int i = 0; i < (int)(sizeof o / sizeof o[0]); ++i)
    if (!(o[i] >= 0.0f && o[i] <= 1.0f)) return 2; /* a convex combination of V values in [0, 1] */
  p.head_dim = 0;
  if (fc_attention(&p, q, k, v, o, NULL, FC_LOC_AUTO, NULL, NULL) != FC_ERROR_INVALID) return 3;
  printf("consumer_c: ok (%s); bad input says: %s\n", fc_last_backend(), fc_last_error());
  fc_finalize();
  return 0;
}
