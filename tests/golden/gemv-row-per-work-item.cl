typedef struct { float _0; float _1; } Tuple_float_float;

float mult(float x, float y) {
  return x * y;
}

float add(float x, float y) {
  return x + y;
}

// map_glb[rows](to_global((row) => reduce_seq((acc, p) => add(acc, mult(get(0) << p, get(1) << p)),...
kernel void lift_kernel(const global float* restrict a,
    const global float* restrict v,
    global float* restrict out,
    int M,
    int N) {
  {  // map_glb[rows](to_global((row) => reduce_seq((acc, p) => add(acc, mu...: one iteration per work-item
    int gl_rows = get_global_id(0);
    float acc;  // acc for Float
    acc = 0.0f;  // initial value
    for (int i = 0; i < N; i++) {  // reduce_seq((acc, p) => add(acc, mult(get(0) << p, get(1) << p)))
      acc = add(acc, mult(a[N*gl_rows + i], v[i]));  // add
    }
    out[gl_rows] = acc;  // reduction result
  }
}
