typedef struct { float _0; float _1; } Tuple_float_float;

float mult(float x, float y) {
  return x * y;
}

float add(float x, float y) {
  return x + y;
}

// map_glb[rows]((r) => map_glb(to_global((c) => reduce_seq((acc, p) => add(acc, mult(get(0) << p, g...
kernel void lift_kernel(const global float* restrict a,
    const global float* restrict bt,
    global float* restrict out,
    int M,
    int K,
    int N) {
  {  // map_glb[rows]((r) => map_glb(to_global((c) => reduce_seq((acc, p) =...: one iteration per work-item
    int gl_rows = get_global_id(1);
    {  // map_glb(to_global((c) => reduce_seq((acc, p) => add(acc, mult(get(0...: one iteration per work-item
      int gl = get_global_id(0);
      float acc;  // acc for Float
      acc = 0.0f;  // initial value
      for (int i = 0; i < K; i++) {  // reduce_seq((acc, p) => add(acc, mult(get(0) << p, get(1) << p)))
        acc = add(acc, mult(a[K*gl_rows + i], bt[K*gl + i]));  // add
      }
      out[N*gl_rows + gl] = acc;  // reduction result
    }
  }
}
