typedef struct { float _0; float _1; } Tuple_float_float;

float add(float x, float y) {
  return x + y;
}

float max_(float x, float y) {
  return (x > y || x != x) ? x : y;
}

// tuple(reduce_seq((acc, a) => add(acc, add(get(0) << a, get(1) << a)), 0.0) << zip(a2, b), reduce_...
kernel void lift_kernel(const global float* restrict a,
    const global float* restrict b,
    const global float* restrict c,
    global float* restrict out_0,
    global float* restrict out_1,
    int N,
    int M) {
  for (int task = get_global_id(0); task < 2; task += get_global_size(0)) {  // the result tuple's sequential components, one work-item each
    if (task == 0) {  // result component 0
      float acc;  // acc for Float
      acc = 0.0f;  // initial value
      for (int i = 0; i < N; i++) {  // reduce_seq((acc, a) => add(acc, add(get(0) << a, get(1) << a)))
        acc = add(acc, add(a[i], b[i]));  // add
      }
      out_0[0] = acc;  // reduction result
    }
    if (task == 1) {  // result component 1
      float acc_1;  // acc for Float
      acc_1 = -INFINITY;  // initial value
      for (int i_1 = 0; i_1 < M; i_1++) {  // reduce_seq(max_)
        acc_1 = max_(acc_1, c[i_1]);  // max_
      }
      out_1[0] = acc_1;  // reduction result
    }
  }
}
