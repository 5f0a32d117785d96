typedef struct { float _0; float _1; } Tuple_float_float;

float mult(float a, float b) {
  return a * b;
}

float add(float x, float y) {
  return x + y;
}

// map_glb((row) => reduce_seq((acc, a) => add(acc, mult(get(0) << a, get(1) << a)), 0.0) << zip(row...
kernel void lift_kernel(const global float* restrict a,
    const global float* restrict v,
    global float* restrict out,
    int M,
    int N) {
  {  // map_glb((row) => reduce_seq((acc, a) => add(acc, mult(get(0) << a, ...: one iteration per work-item
    int gl = get_global_id(0);
    float acc;  // acc for Float
    acc = 0.0f;  // initial value
    for (int i = 0; i < N; i++) {  // reduce_seq((acc, a) => add(acc, mult(get(0) << a, get(1) << a)))
      acc = add(acc, mult(a[N*gl + i], v[i]));  // add
    }
    out[gl] = acc;  // reduction result
  }
}
