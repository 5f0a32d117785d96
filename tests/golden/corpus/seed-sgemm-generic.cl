typedef struct { float _0; float _1; } Tuple_float_float;

float mult(float a, float b) {
  return a * b;
}

float add(float x, float y) {
  return x + y;
}

float axpby(float alpha, float ab, float beta, float c) {
  return alpha * ab + beta * c;
}

// map_glb((rc) => map_glb((col_c) => axpby(alpha, reduce_seq((acc, a) => add(acc, mult(get(0) << a,...
kernel void lift_kernel(const global float* restrict alpha,
    const global float* restrict a,
    const global float* restrict b,
    const global float* restrict c,
    const global float* restrict beta,
    global float* restrict out,
    int M,
    int K,
    int N) {
  {  // map_glb((rc) => map_glb((col_c) => axpby(alpha, reduce_seq((acc, a)...: one iteration per work-item
    int gl = get_global_id(1);
    {  // map_glb((col_c) => axpby(alpha, reduce_seq((acc, a) => add(acc, mul...: one iteration per work-item
      int gl_1 = get_global_id(0);
      float acc;  // acc for Float
      acc = 0.0f;  // initial value
      for (int i = 0; i < K; i++) {  // reduce_seq((acc, a) => add(acc, mult(get(0) << a, get(1) << a)))
        acc = add(acc, mult(a[K*gl + i], b[N*i + gl_1]));  // add
      }
      out[N*gl + gl_1] = axpby(alpha[0], acc, beta[0], c[N*gl + gl_1]);  // axpby
    }
  }
}
