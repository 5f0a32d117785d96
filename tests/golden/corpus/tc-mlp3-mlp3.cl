typedef struct { float _0; float _1; } Tuple_float_float;

float mult(float x, float y) {
  return x * y;
}

float add(float x, float y) {
  return x + y;
}

float max_(float x, float y) {
  return (x > y || x != x) ? x : y;
}

// (k0, k1, k2) => map_glb((b) => map_glb((o) => max_(add(get(1) << o, reduce_seq((acc, a) => add(ac...
kernel void lift_kernel(const global float* restrict I,
    const global float* restrict W2,
    const global float* restrict B2,
    global float* restrict tmp,
    int B,
    int N,
    int O,
    int P,
    int Q) {
  {  // map_glb((b) => map_glb((o) => max_(add(get(1) << o, reduce_seq((acc...: one iteration per work-item
    int gl = get_global_id(1);
    {  // map_glb((o) => max_(add(get(1) << o, reduce_seq((acc, a) => add(acc...: one iteration per work-item
      int gl_1 = get_global_id(0);
      float acc;  // acc for Float
      acc = 0.0f;  // initial value
      for (int i = 0; i < N; i++) {  // reduce_seq((acc, a) => add(acc, mult(get(0) << a, get(1) << a)))
        acc = add(acc, mult(I[N*gl + i], W2[N*gl_1 + i]));  // add
      }
      tmp[O*gl + gl_1] = max_(add(B2[gl_1], acc), 0.0f);  // max_
    }
  }
}

// (k0, k1, k2) => map_glb((b) => map_glb((o) => max_(add(get(1) << o, reduce_seq((acc, a) => add(ac...
kernel void lift_kernel_1(const global float* restrict I,
    const global float* restrict W2,
    const global float* restrict B2,
    global float* restrict tmp_1,
    int B,
    int N,
    int O,
    int P,
    int Q) {
  {  // map_glb((b) => map_glb((o) => max_(add(get(1) << o, reduce_seq((acc...: one iteration per work-item
    int gl_2 = get_global_id(1);
    {  // map_glb((o) => max_(add(get(1) << o, reduce_seq((acc, a) => add(acc...: one iteration per work-item
      int gl_3 = get_global_id(0);
      float acc_1;  // acc for Float
      acc_1 = 0.0f;  // initial value
      for (int i_1 = 0; i_1 < N; i_1++) {  // reduce_seq((acc, a) => add(acc, mult(get(0) << a, get(1) << a)))
        acc_1 = add(acc_1, mult(I[N*gl_2 + i_1], W2[N*gl_3 + i_1]));  // add
      }
      tmp_1[O*gl_2 + gl_3] = max_(add(B2[gl_3], acc_1), 0.0f);  // max_
    }
  }
}

// (k0, k1, k2) => map_glb((b) => map_glb((p) => max_(add(get(1) << p, reduce_seq((acc, a) => add(ac...
kernel void lift_kernel_2(const global float* restrict W3,
    const global float* restrict B3,
    global float* restrict tmp_1,
    global float* restrict tmp_2,
    int B,
    int N,
    int O,
    int P,
    int Q) {
  {  // map_glb((b) => map_glb((p) => max_(add(get(1) << p, reduce_seq((acc...: one iteration per work-item
    int gl_4 = get_global_id(1);
    {  // map_glb((p) => max_(add(get(1) << p, reduce_seq((acc, a) => add(acc...: one iteration per work-item
      int gl_5 = get_global_id(0);
      float acc_2;  // acc for Float
      acc_2 = 0.0f;  // initial value
      for (int i_2 = 0; i_2 < O; i_2++) {  // reduce_seq((acc, a) => add(acc, mult(get(0) << a, get(1) << a)))
        acc_2 = add(acc_2, mult(tmp_1[O*gl_4 + i_2], W3[O*gl_5 + i_2]));  // add
      }
      tmp_2[P*gl_4 + gl_5] = max_(add(B3[gl_5], acc_2), 0.0f);  // max_
    }
  }
}

// (k0, k1, k2, k3, k4, k5, k6, k7, k8) => tuple(map_glb((b) => map_glb((o) => max_(add(get(1) << o,...
kernel void lift_kernel_3(const global float* restrict I,
    const global float* restrict W2,
    const global float* restrict B2,
    const global float* restrict W3,
    const global float* restrict B3,
    const global float* restrict W4,
    const global float* restrict B4,
    global float* restrict out_0,
    global float* restrict out_1,
    global float* restrict out_2,
    global float* restrict tmp,
    global float* restrict tmp_2,
    int B,
    int N,
    int O,
    int P,
    int Q) {
  {  // map_glb((b) => map_glb((o) => max_(add(get(1) << o, reduce_seq((acc...: one iteration per work-item
    int gl_6 = get_global_id(1);
    {  // map_glb((o) => max_(add(get(1) << o, reduce_seq((acc, a) => add(acc...: one iteration per work-item
      int gl_7 = get_global_id(0);
      float acc_3;  // acc for Float
      acc_3 = 0.0f;  // initial value
      for (int i_3 = 0; i_3 < N; i_3++) {  // reduce_seq((acc, a) => add(acc, mult(get(0) << a, get(1) << a)))
        acc_3 = add(acc_3, mult(I[N*gl_6 + i_3], W2[N*gl_7 + i_3]));  // add
      }
      out_0[O*gl_6 + gl_7] = max_(add(B2[gl_7], acc_3), 0.0f);  // max_
    }
  }
  {  // map_glb((b) => map_glb((p) => max_(add(get(1) << p, reduce_seq((acc...: one iteration per work-item
    int gl_8 = get_global_id(1);
    for (int gl_9 = get_global_id(0); gl_9 < P; gl_9 += get_global_size(0)) {  // map_glb((p) => max_(add(get(1) << p, reduce_seq((acc, a) => add(acc...
      float acc_4;  // acc for Float
      acc_4 = 0.0f;  // initial value
      for (int i_4 = 0; i_4 < O; i_4++) {  // reduce_seq((acc, a) => add(acc, mult(get(0) << a, get(1) << a)))
        acc_4 = add(acc_4, mult(tmp[O*gl_8 + i_4], W3[O*gl_9 + i_4]));  // add
      }
      out_1[P*gl_8 + gl_9] = max_(add(B3[gl_9], acc_4), 0.0f);  // max_
    }
  }
  {  // map_glb((b) => map_glb((q) => max_(add(get(1) << q, reduce_seq((acc...: one iteration per work-item
    int gl_10 = get_global_id(1);
    for (int gl_11 = get_global_id(0); gl_11 < Q; gl_11 += get_global_size(0)) {  // map_glb((q) => max_(add(get(1) << q, reduce_seq((acc, a) => add(acc...
      float acc_5;  // acc for Float
      acc_5 = 0.0f;  // initial value
      for (int i_5 = 0; i_5 < P; i_5++) {  // reduce_seq((acc, a) => add(acc, mult(get(0) << a, get(1) << a)))
        acc_5 = add(acc_5, mult(tmp_2[P*gl_10 + i_5], W4[P*gl_11 + i_5]));  // add
      }
      out_2[Q*gl_10 + gl_11] = max_(add(B4[gl_11], acc_5), 0.0f);  // max_
    }
  }
}
