typedef struct { float _0; float _1; } Tuple_float_float;

float8 id_v8(float8 x) {
  return x;
}

float mult(float a, float b) {
  return a * b;
}

float add(float x, float y) {
  return x + y;
}

float id(float x) {
  return x;
}

// (k0) => map_glb(to_global(vectorise(id, 8))) << k0
kernel void lift_kernel(const global float* restrict inp,
    global float* restrict tmp) {
  {  // map_glb(to_global(vectorise(id, 8))): one iteration per work-item
    int gl = get_global_id(0);
    ((global float8*)tmp)[gl] = id_v8(((0 <= gl / 16 % 10 - 1 && gl / 16 % 10 - 1 < 8) ? ((0 <= gl / 160 - 1 && gl / 160 - 1 < 8) ? ((global float8*)inp)[128*(gl / 160) + 16*(gl / 16 % 10) + gl % 16 - 144] : (float8)(0.0f)) : (float8)(0.0f)));  // vectorise(id, 8)
  }
}

// (k0) => map_glb(to_global(vectorise(id, 8))) << k0
kernel void lift_kernel_1(global float* restrict tmp,
    global float* restrict tmp_1) {
  {  // map_glb(to_global(vectorise(id, 8))): one iteration per work-item
    int gl_1 = get_global_id(0);
    ((global float8*)tmp_1)[gl_1] = id_v8(((global float8*)tmp)[32*(gl_1 / 1152) + 16*(gl_1 / 144) + 16*(gl_1 / 16 % 3) + 160*(gl_1 / 48 % 3) + gl_1 % 16]);  // vectorise(id, 8)
  }
}

// (k0) => map_glb((tiles) => join << join << map_glb((ba) => map(join) << transpose << map_glb((bb)...
kernel void lift_kernel_2(const global float* restrict wts,
    global float* restrict tmp_1,
    global float* restrict tmp_2) {
  {  // map_glb((tiles) => join << join << map_glb((ba) => map(join) << tra...: one iteration per work-item
    int gl_2 = get_global_id(2);
    {  // map_glb((ba) => map(join) << transpose << map_glb((bb) => reduce_se...: one iteration per work-item
      int gl_3 = get_global_id(1);
      {  // map_glb((bb) => reduce_seq((acc, q) => map_seq((ar) => map_seq((cb)...: one iteration per work-item
        int gl_4 = get_global_id(0);
        float acc[8];  // acc for [[Float]4]2
        #pragma unroll
        for (int c = 0; c < 2; c++) {  // copy (initial value)
          #pragma unroll
          for (int c_1 = 0; c_1 < 4; c_1++) {  // copy (initial value)
            acc[4*c + c_1] = 0.0f;  // initial value
          }
        }
        #pragma unroll
        for (int i = 0; i < 1; i++) {  // reduce_seq((acc, q) => map_seq((ar) => map_seq((cb) => add(get(0) <...
          #pragma unroll
          for (int i_1 = 0; i_1 < 2; i_1++) {  // map_seq((ar) => map_seq((cb) => add(get(0) << cb, mult << tuple(get...
            #pragma unroll
            for (int i_2 = 0; i_2 < 4; i_2++) {  // map_seq((cb) => add(get(0) << cb, mult << tuple(get(1) << ar, get(1...
              float tmp_3;  // temp for Float
              tmp_3 = mult(tmp_1[gl_2 + 2304*gl_3 + i + 1152*i_1], wts[gl_2 + 4608*gl_4 + i + 1152*i_2]);  // mult
              acc[4*i_1 + i_2] = add(acc[4*i_1 + i_2], tmp_3);  // add
            }
          }
        }
        #pragma unroll
        for (int c_2 = 0; c_2 < 2; c_2++) {  // copy (reduction result)
          #pragma unroll
          for (int c_3 = 0; c_3 < 4; c_3++) {  // copy (reduction result)
            tmp_2[128*c_2 + c_3 + 8192*gl_2 + 256*gl_3 + 4*gl_4] = acc[4*c_2 + c_3];  // reduction result
          }
        }
      }
    }
  }
}

// (k0) => map_glb((col) => to_global(id) << reduce_seq(add, to_private(id) << 0.0) << col) << k0
kernel void lift_kernel_3(global float* restrict out,
    global float* restrict tmp_2) {
  {  // map_glb((col) => to_global(id) << reduce_seq(add, to_private(id) <<...: one iteration per work-item
    int gl_5 = get_global_id(0);
    float tmp_4;  // temp for Float
    tmp_4 = id(0.0f);  // id
    for (int i_3 = 0; i_3 < 1152; i_3++) {  // reduce_seq(add)
      tmp_4 = add(tmp_4, tmp_2[gl_5 + 8192*i_3]);  // add
    }
    out[gl_5] = id(tmp_4);  // id
  }
}
