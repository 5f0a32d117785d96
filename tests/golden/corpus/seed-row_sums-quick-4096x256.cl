float8 add_v8(float8 x, float8 y) {
  return x + y;
}

float lane_sum8_float(float8 v) {
  return (((v.s0 + v.s1) + (v.s2 + v.s3)) + ((v.s4 + v.s5) + (v.s6 + v.s7)));
}

float add(float x, float y) {
  return x + y;
}

// map_glb((xs) => reduce_seq(add, reduce_seq(add, 0.0) << pad(-240, 0, 0.0) << xs) << map_seq((chun...
kernel void lift_kernel(const global float* restrict x,
    global float* restrict out,
    global float* restrict tmp) {
  {  // map_glb((xs) => reduce_seq(add, reduce_seq(add, 0.0) << pad(-240, 0...: one iteration per work-item
    int gl = get_global_id(0);
    #pragma unroll
    for (int i = 0; i < 10; i++) {  // map_seq((chunk) => lane_sum8_float << reduce_seq(vectorise(add, 8),...
      float8 acc;  // acc for <Float>8
      acc = (float8)(0.0f);  // initial value
      #pragma unroll
      for (int i_1 = 0; i_1 < 3; i_1++) {  // reduce_seq(vectorise(add, 8))
        acc = add_v8(acc, ((global float8*)x)[32*gl + 3*i + i_1]);  // vectorise(add, 8)
      }
      tmp[10*gl + i] = lane_sum8_float(acc);  // lane_sum8_float
    }
    float acc_2;  // acc for Float
    float acc_1;  // acc for Float
    acc_1 = 0.0f;  // initial value
    #pragma unroll
    for (int i_2 = 0; i_2 < 16; i_2++) {  // reduce_seq(add)
      acc_1 = add(acc_1, x[256*gl + i_2 + 240]);  // add
    }
    acc_2 = acc_1;  // initial value
    #pragma unroll
    for (int i_3 = 0; i_3 < 10; i_3++) {  // reduce_seq(add)
      acc_2 = add(acc_2, tmp[10*gl + i_3]);  // add
    }
    out[gl] = acc_2;  // reduction result
  }
}
