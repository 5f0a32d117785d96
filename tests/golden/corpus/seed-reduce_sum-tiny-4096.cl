float add(float x, float y) {
  return x + y;
}

void lift_atomic_add_float(volatile global float* p, float v) {
  uint old = as_uint(*p), seen;
  while ((seen = atomic_cmpxchg((volatile global uint*)p, old, as_uint(add(as_float(old), v)))) != old)
    old = seen;
}

float8 add_v8(float8 x, float8 y) {
  return x + y;
}

float lane_sum8_float(float8 v) {
  return (((v.s0 + v.s1) + (v.s2 + v.s3)) + ((v.s4 + v.s5) + (v.s6 + v.s7)));
}

// (k0) => reduce_seq(add, 0.0) << k0
kernel void lift_kernel(const global float* restrict x,
    global float* restrict tmp,
    int N) {
  float acc;  // acc for Float
  acc = 0.0f;  // initial value
  for (int i = 0; i < N % 2048; i++) {  // reduce_seq(add)
    acc = add(acc, x[i + 2048*(N / 2048)]);  // add
  }
  tmp[0] = acc;  // reduction result
}

// pre-fill for lift_kernel_1
kernel void lift_kernel_1_fill(const global float* restrict x,
    global float* restrict out,
    global float* restrict tmp,
    int N) {
  out[0] = tmp[0];  // reduce_atomic's initial value
}

// (k0, k1) => reduce_atomic(add, k0) << map_glb((chunk) => lane_sum8_float << reduce_seq(vectorise(...
kernel void lift_kernel_1(const global float* restrict x,
    global float* restrict out,
    global float* restrict tmp,
    int N) {
  {  // map_glb((chunk) => lane_sum8_float << reduce_seq(vectorise(add, 8),...: one iteration per work-item
    int gl = get_global_id(0);
    float tmp_1;  // temp for Float
    float8 acc_1;  // acc for <Float>8
    acc_1 = (float8)(0.0f);  // initial value
    for (int i_1 = 0; i_1 < 256; i_1++) {  // reduce_seq(vectorise(add, 8))
      acc_1 = add_v8(acc_1, ((global float8*)x)[256*gl + i_1]);  // vectorise(add, 8)
    }
    tmp_1 = lane_sum8_float(acc_1);  // lane_sum8_float
    lift_atomic_add_float(&out[0], tmp_1);  // reduce_atomic(add): combined atomically
  }
}
