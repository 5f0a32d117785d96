typedef struct { float _0; float _1; } Tuple_float_float;

float4 id_v4(float4 x) {
  return x;
}

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

// (k0) => map_glb(to_global(vectorise(id, 4))) << k0
kernel void lift_kernel(const global float* restrict inp,
    global float* restrict tmp) {
  {  // map_glb(to_global(vectorise(id, 4))): one iteration per work-item
    int gl = get_global_id(0);
    ((global float4*)tmp)[gl] = id_v4((float4)(((0 <= (gl + gl / 3) % 10 - 1 && (gl + gl / 3) % 10 - 1 < 8) ? ((0 <= (gl + gl / 3) / 10 - 1 && (gl + gl / 3) / 10 - 1 < 8) ? inp[24*((gl + gl / 3) / 10) + 3*((gl + gl / 3) % 10) + gl % 3 - 27] : 0.0f) : 0.0f), ((0 <= (gl + (gl + 1) / 3) % 10 - 1 && (gl + (gl + 1) / 3) % 10 - 1 < 8) ? ((0 <= (gl + (gl + 1) / 3) / 10 - 1 && (gl + (gl + 1) / 3) / 10 - 1 < 8) ? inp[24*((gl + (gl + 1) / 3) / 10) + 3*((gl + (gl + 1) / 3) % 10) + (gl + 1) % 3 - 27] : 0.0f) : 0.0f), ((0 <= (gl + (gl + 2) / 3) % 10 - 1 && (gl + (gl + 2) / 3) % 10 - 1 < 8) ? ((0 <= (gl + (gl + 2) / 3) / 10 - 1 && (gl + (gl + 2) / 3) / 10 - 1 < 8) ? inp[24*((gl + (gl + 2) / 3) / 10) + 3*((gl + (gl + 2) / 3) % 10) + (gl + 2) % 3 - 27] : 0.0f) : 0.0f), ((0 <= (gl + gl / 3 + 1) % 10 - 1 && (gl + gl / 3 + 1) % 10 - 1 < 8) ? ((0 <= (gl + gl / 3 + 1) / 10 - 1 && (gl + gl / 3 + 1) / 10 - 1 < 8) ? inp[24*((gl + gl / 3 + 1) / 10) + 3*((gl + gl / 3 + 1) % 10) + gl % 3 - 27] : 0.0f) : 0.0f)));  // vectorise(id, 4)
  }
}

// (k0) => map_glb(to_global(vectorise(id, 8))) << k0
kernel void lift_kernel_1(global float* restrict tmp,
    global float* restrict tmp_1) {
  {  // map_glb(to_global(vectorise(id, 8))): one iteration per work-item
    int gl_1 = get_global_id(0);
    ((global float8*)tmp_1)[gl_1] = id_v8((float8)(tmp[30*(gl_1 / 27) + 30*((2*gl_1 + 2*gl_1 / 3) / 3 % 3) + 3*((2*gl_1 + 2*gl_1 / 3) % 3) + 3*(8*gl_1 / 27 % 8) + 2*gl_1 % 3], tmp[30*((8*gl_1 + 1) / 216) + 30*((2*gl_1 + (2*gl_1 + 1) / 3) / 3 % 3) + 3*((8*gl_1 + 1) / 27 % 8) + 3*((2*gl_1 + (2*gl_1 + 1) / 3) % 3) + (2*gl_1 + 1) % 3], tmp[30*((4*gl_1 + 1) / 108) + 30*((2*gl_1 + (2*gl_1 + 2) / 3) / 3 % 3) + 3*((8*gl_1 + 2) / 27 % 8) + 3*((2*gl_1 + (2*gl_1 + 2) / 3) % 3) + (2*gl_1 + 2) % 3], tmp[30*((8*gl_1 + 3) / 216) + 30*((2*gl_1 + 2*gl_1 / 3 + 1) / 3 % 3) + 3*((8*gl_1 + 3) / 27 % 8) + 3*((2*gl_1 + 2*gl_1 / 3 + 1) % 3) + 2*gl_1 % 3], tmp[30*((2*gl_1 + 1) / 54) + 30*((2*gl_1 + (2*gl_1 + 1) / 3 + 1) / 3 % 3) + 3*((8*gl_1 + 4) / 27 % 8) + 3*((2*gl_1 + (2*gl_1 + 1) / 3 + 1) % 3) + (2*gl_1 + 1) % 3], tmp[30*((8*gl_1 + 5) / 216) + 30*((2*gl_1 + (2*gl_1 + 2) / 3 + 1) / 3 % 3) + 3*((8*gl_1 + 5) / 27 % 8) + 3*((2*gl_1 + (2*gl_1 + 2) / 3 + 1) % 3) + (2*gl_1 + 2) % 3], tmp[30*((4*gl_1 + 3) / 108) + 30*((2*gl_1 + 2*gl_1 / 3 + 2) / 3 % 3) + 3*((8*gl_1 + 6) / 27 % 8) + 3*((2*gl_1 + 2*gl_1 / 3 + 2) % 3) + 2*gl_1 % 3], tmp[30*((8*gl_1 + 7) / 216) + 30*((2*gl_1 + (2*gl_1 + 1) / 3 + 2) / 3 % 3) + 3*((8*gl_1 + 7) / 27 % 8) + 3*((2*gl_1 + (2*gl_1 + 1) / 3 + 2) % 3) + (2*gl_1 + 1) % 3]));  // vectorise(id, 8)
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
              tmp_3 = mult(tmp_1[gl_2 + 54*gl_3 + i + 27*i_1], wts[gl_2 + 108*gl_4 + i + 27*i_2]);  // mult
              acc[4*i_1 + i_2] = add(acc[4*i_1 + i_2], tmp_3);  // add
            }
          }
        }
        #pragma unroll
        for (int c_2 = 0; c_2 < 2; c_2++) {  // copy (reduction result)
          #pragma unroll
          for (int c_3 = 0; c_3 < 4; c_3++) {  // copy (reduction result)
            tmp_2[64*c_2 + c_3 + 4096*gl_2 + 128*gl_3 + 4*gl_4] = acc[4*c_2 + c_3];  // reduction result
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
    for (int i_3 = 0; i_3 < 27; i_3++) {  // reduce_seq(add)
      tmp_4 = add(tmp_4, tmp_2[gl_5 + 4096*i_3]);  // add
    }
    out[gl_5] = id(tmp_4);  // id
  }
}
