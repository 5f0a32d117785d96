float8 add_v8(float8 x, float8 y) {
  return x + y;
}

float lane_sum8_float(float8 v) {
  return (((v.s0 + v.s1) + (v.s2 + v.s3)) + ((v.s4 + v.s5) + (v.s6 + v.s7)));
}

float add(float x, float y) {
  return x + y;
}

// map_glb((xs) => reduce_seq(add, 0.0) << map_seq((chunk) => lane_sum8_float << reduce_seq(vectoris...
kernel void lift_kernel(const global float* restrict x,
    global float* restrict out,
    global float* restrict tmp) {
  {  // map_glb((xs) => reduce_seq(add, 0.0) << map_seq((chunk) => lane_sum...: one iteration per work-item
    int gl = get_global_id(0);
    #pragma unroll
    for (int i = 0; i < 16; i++) {  // map_seq((chunk) => lane_sum8_float << reduce_seq(vectorise(add, 8),...
      float8 acc;  // acc for <Float>8
      acc = (float8)(0.0f);  // initial value
      for (int i_1 = 0; i_1 < 32; i_1++) {  // reduce_seq(vectorise(add, 8))
        acc = add_v8(acc, ((global float8*)x)[512*gl + 32*i + i_1]);  // vectorise(add, 8)
      }
      tmp[16*gl + i] = lane_sum8_float(acc);  // lane_sum8_float
    }
    float acc_1;  // acc for Float
    acc_1 = 0.0f;  // initial value
    #pragma unroll
    for (int i_2 = 0; i_2 < 16; i_2++) {  // reduce_seq(add)
      acc_1 = add(acc_1, tmp[16*gl + i_2]);  // add
    }
    out[gl] = acc_1;  // reduction result
  }
}
