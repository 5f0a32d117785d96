typedef struct { float16 _0; float16 _1; } Tuple_float16_float16;

float16 add_v16(float16 x, float16 y) {
  return x + y;
}

float16 id_v16(float16 x) {
  return x;
}

float add(float x, float y) {
  return x + y;
}

// (k0) => map_glb((part) => as_scalar << join << map_glb((cs) => to_global(map_seq(vectorise(id, 16...
kernel void lift_kernel(const global float* restrict x,
    global float* restrict tmp) {
  {  // map_glb((part) => as_scalar << join << map_glb((cs) => to_global(ma...: one iteration per work-item
    int gl = get_global_id(1);
    {  // map_glb((cs) => to_global(map_seq(vectorise(id, 16))) << reduce_seq...: one iteration per work-item
      int gl_1 = get_global_id(0);
      float16 acc[8];  // acc for [<Float>16]8
      #pragma unroll
      for (int c = 0; c < 8; c++) {  // copy (initial value)
        acc[c] = (float16)(0.0f);  // initial value
      }
      for (int i = 0; i < 128; i++) {  // reduce_seq((acc, e) => map_seq(vectorise(add, 16)) << zip(acc, e))
        #pragma unroll
        for (int i_1 = 0; i_1 < 8; i_1++) {  // map_seq(vectorise(add, 16))
          acc[i_1] = add_v16(acc[i_1], ((global float16*)x)[6144*gl + 8*gl_1 + 48*i + i_1]);  // vectorise(add, 16)
        }
      }
      #pragma unroll
      for (int i_2 = 0; i_2 < 8; i_2++) {  // map_seq(vectorise(id, 16))
        ((global float16*)tmp)[48*gl + 8*gl_1 + i_2] = id_v16(acc[i_2]);  // vectorise(id, 16)
      }
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
    for (int i_3 = 0; i_3 < 16; i_3++) {  // reduce_seq(add)
      acc_1 = add(acc_1, tmp[gl_2 + 768*i_3]);  // add
    }
    out[gl_2] = acc_1;  // reduction result
  }
}
