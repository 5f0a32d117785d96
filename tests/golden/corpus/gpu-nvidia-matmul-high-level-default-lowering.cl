typedef struct { float _0; float _1; } Tuple_float_float;

float mult(float a, float b) {
  return a * b;
}

float add(float x, float y) {
  return x + y;
}

// map_wrg((r) => map_lcl((c) => reduce_seq((acc, a) => add(acc, mult(get(0) << a, get(1) << a)), 0....
kernel void lift_kernel(const global float* restrict a,
    const global float* restrict bt,
    global float* restrict out,
    int M,
    int K,
    int N) {
  {  // map_wrg((r) => map_lcl((c) => reduce_seq((acc, a) => add(acc, mult(...: one iteration per work-item
    int wg = get_group_id(0);
    for (int l = get_local_id(0); l < N; l += get_local_size(0)) {  // map_lcl((c) => reduce_seq((acc, a) => add(acc, mult(get(0) << a, ge...
      float acc;  // acc for Float
      acc = 0.0f;  // initial value
      for (int i = 0; i < K; i++) {  // reduce_seq((acc, a) => add(acc, mult(get(0) << a, get(1) << a)))
        acc = add(acc, mult(a[K*wg + i], bt[K*l + i]));  // add
      }
      out[N*wg + l] = acc;  // reduction result
    }
  }
}
