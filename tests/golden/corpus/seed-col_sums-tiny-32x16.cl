float16 add_v16(float16 x, float16 y) {
  return x + y;
}

float add(float x, float y) {
  return x + y;
}

// (k0) => map_glb((part) => as_scalar << map_glb((cs) => reduce_seq(vectorise(add, 16), value(0.0, ...
kernel void lift_kernel(const global float* restrict x,
    global float* restrict tmp) {
  {  // map_glb((part) => as_scalar << map_glb((cs) => reduce_seq(vectorise...: one iteration per work-item
    int gl = get_global_id(1);
    {  // map_glb((cs) => reduce_seq(vectorise(add, 16), value(0.0, <Float>16...: one iteration per work-item
      int gl_1 = get_global_id(0);
      float16 acc;  // acc for <Float>16
      acc = (float16)(0.0f);  // initial value
      #pragma unroll
      for (int i = 0; i < 8; i++) {  // reduce_seq(vectorise(add, 16))
        acc = add_v16(acc, ((global float16*)x)[8*gl + gl_1 + i]);  // vectorise(add, 16)
      }
      ((global float16*)tmp)[gl + gl_1] = acc;  // reduction result
    }
  }
}

// (k0) => map_glb((ps) => reduce_seq(add, 0.0) << ps) << k0
kernel void lift_kernel_1(global float* restrict out,
    global float* restrict tmp) {
  {  // map_glb((ps) => reduce_seq(add, 0.0) << ps): one iteration per work-item
    int gl_2 = get_global_id(0);
    float acc_1;  // acc for Float
    acc_1 = 0.0f;  // initial value
    #pragma unroll
    for (int i_1 = 0; i_1 < 4; i_1++) {  // reduce_seq(add)
      acc_1 = add(acc_1, tmp[gl_2 + 16*i_1]);  // add
    }
    out[gl_2] = acc_1;  // reduction result
  }
}
