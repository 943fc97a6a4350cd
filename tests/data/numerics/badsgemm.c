/* A deliberately wrong BLAS sgemm_: C = alpha op(A) op(B) + beta C, then every other
   element of C times 1.5 (column-major, Fortran calling convention). */
static float at(const float *x, int ld, int trans, long i, long j) {
    return trans ? x[j + i * ld] : x[i + j * ld];
}
void sgemm_(const char *ta, const char *tb, const int *m, const int *n, const int *k,
            const float *alpha, const float *a, const int *lda, const float *b,
            const int *ldb, const float *beta, float *c, const int *ldc) {
    int trans_a = (*ta != 'N' && *ta != 'n'), trans_b = (*tb != 'N' && *tb != 'n');
    for (long j = 0; j < *n; j++)
        for (long i = 0; i < *m; i++) {
            float sum = 0.0f;
            for (long p = 0; p < *k; p++)
                sum += at(a, *lda, trans_a, i, p) * at(b, *ldb, trans_b, p, j);
            float *out = &c[i + j * *ldc];
            *out = *alpha * sum + (*beta == 0.0f ? 0.0f : *beta * *out);
            if ((i + j) % 2) *out *= 1.5f;
        }
}
