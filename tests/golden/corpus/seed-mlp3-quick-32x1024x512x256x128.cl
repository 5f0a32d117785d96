typedef struct { float8 _0; float8 _1; } Tuple_float8_float8;

float8 id_v8(float8 x) {
  return x;
}

float8 bcast8_float(float a) {
  return (float8)(a);
}

float8 add_mult_v8(float8 x, float8 mult_a, float8 mult_b) {
  return x + (mult_a * mult_b);
}

float bias_relu(float x, float b) {
  float y = x + b;
  return y > 0.0f ? y : 0.0f;
}

// (pb) => transpose_w << map_glb((row) => split(16) << as_scalar << map_glb(to_global(vectorise(id,...
kernel void lift_kernel(const global float* restrict w1,
    global float* restrict tmp) {
  {  // map_glb((row) => split(16) << as_scalar << map_glb(to_global(vector...: one iteration per work-item
    int gl = get_global_id(1);
    {  // map_glb(to_global(vectorise(id, 8))): one iteration per work-item
      int gl_1 = get_global_id(0);
      ((global float8*)tmp)[2*gl + gl_1 + 2046*(gl_1 / 2)] = id_v8((float8)(w1[gl + 8192*gl_1], w1[gl + 8192*gl_1 + 1024], w1[gl + 8192*gl_1 + 2048], w1[gl + 8192*gl_1 + 3072], w1[gl + 8192*gl_1 + 4096], w1[gl + 8192*gl_1 + 5120], w1[gl + 8192*gl_1 + 6144], w1[gl + 8192*gl_1 + 7168]));  // vectorise(id, 8)
    }
  }
}

// (ta, tx) => join << map_glb((as) => map(join) << transpose << map_glb((xs) => map(as_scalar) << t...
kernel void lift_kernel_1(const global float* restrict x,
    global float* restrict tmp,
    global float* restrict tmp_1) {
  {  // map_glb((as) => map(join) << transpose << map_glb((xs) => map(as_sc...: one iteration per work-item
    int gl_2 = get_global_id(1);
    {  // map_glb((xs) => map(as_scalar) << to_global(map_seq(map_seq(vectori...: one iteration per work-item
      int gl_3 = get_global_id(0);
      float8 acc[8];  // acc for [[<Float>8]2]4
      #pragma unroll
      for (int c = 0; c < 4; c++) {  // copy (initial value)
        #pragma unroll
        for (int c_1 = 0; c_1 < 2; c_1++) {  // copy (initial value)
          acc[2*c + c_1] = (float8)(0.0f);  // initial value
        }
      }
      for (int i = 0; i < 1024; i++) {  // reduce_seq((acc, ab) => map_seq((ra) => map_seq((c) => vectorise(ad...
        #pragma unroll
        for (int i_1 = 0; i_1 < 4; i_1++) {  // map_seq((ra) => map_seq((c) => vectorise(add_mult, 8)(get(0) << c, ...
          #pragma unroll
          for (int i_2 = 0; i_2 < 2; i_2++) {  // map_seq((c) => vectorise(add_mult, 8)(get(0) << c, bcast8_float << ...
            acc[2*i_1 + i_2] = add_mult_v8(acc[2*i_1 + i_2], bcast8_float(x[4096*gl_2 + i + 1024*i_1]), ((global float8*)tmp)[2048*gl_3 + 2*i + i_2]);  // vectorise(add_mult, 8)
          }
        }
      }
      #pragma unroll
      for (int i_3 = 0; i_3 < 4; i_3++) {  // map_seq(map_seq(vectorise(id, 8)))
        #pragma unroll
        for (int i_4 = 0; i_4 < 2; i_4++) {  // map_seq(vectorise(id, 8))
          ((global float8*)tmp_1)[256*gl_2 + 2*gl_3 + 64*i_3 + i_4] = id_v8(acc[2*i_3 + i_4]);  // vectorise(id, 8)
        }
      }
    }
  }
}

// (t, w1, b1) => map_glb((p) => map_glb((q) => bias_relu(get(1) << q, get(1) << get(0) << q)) << zi...
kernel void lift_kernel_2(const global float* restrict b1,
    global float* restrict tmp_1,
    global float* restrict tmp_2) {
  {  // map_glb((p) => map_glb((q) => bias_relu(get(1) << q, get(1) << get(...: one iteration per work-item
    int gl_4 = get_global_id(1);
    {  // map_glb((q) => bias_relu(get(1) << q, get(1) << get(0) << q)): one iteration per work-item
      int gl_5 = get_global_id(0);
      tmp_2[512*gl_4 + gl_5] = bias_relu(tmp_1[512*gl_4 + gl_5], b1[gl_5]);  // bias_relu
    }
  }
}

// (pb) => transpose_w << map_glb((row) => split(16) << as_scalar << map_glb(to_global(vectorise(id,...
kernel void lift_kernel_3(const global float* restrict w2,
    global float* restrict tmp_3) {
  {  // map_glb((row) => split(16) << as_scalar << map_glb(to_global(vector...: one iteration per work-item
    int gl_6 = get_global_id(1);
    {  // map_glb(to_global(vectorise(id, 8))): one iteration per work-item
      int gl_7 = get_global_id(0);
      ((global float8*)tmp_3)[2*gl_6 + gl_7 + 1022*(gl_7 / 2)] = id_v8((float8)(w2[gl_6 + 4096*gl_7], w2[gl_6 + 4096*gl_7 + 512], w2[gl_6 + 4096*gl_7 + 1024], w2[gl_6 + 4096*gl_7 + 1536], w2[gl_6 + 4096*gl_7 + 2048], w2[gl_6 + 4096*gl_7 + 2560], w2[gl_6 + 4096*gl_7 + 3072], w2[gl_6 + 4096*gl_7 + 3584]));  // vectorise(id, 8)
    }
  }
}

// (ta, tx) => join << map_glb((as) => map(join) << transpose << map_glb((xs) => map(as_scalar) << t...
kernel void lift_kernel_4(global float* restrict tmp_2,
    global float* restrict tmp_3,
    global float* restrict tmp_4) {
  {  // map_glb((as) => map(join) << transpose << map_glb((xs) => map(as_sc...: one iteration per work-item
    int gl_8 = get_global_id(1);
    {  // map_glb((xs) => map(as_scalar) << to_global(map_seq(map_seq(vectori...: one iteration per work-item
      int gl_9 = get_global_id(0);
      float8 acc_1[8];  // acc for [[<Float>8]2]4
      #pragma unroll
      for (int c_2 = 0; c_2 < 4; c_2++) {  // copy (initial value)
        #pragma unroll
        for (int c_3 = 0; c_3 < 2; c_3++) {  // copy (initial value)
          acc_1[2*c_2 + c_3] = (float8)(0.0f);  // initial value
        }
      }
      for (int i_5 = 0; i_5 < 512; i_5++) {  // reduce_seq((acc, ab) => map_seq((ra) => map_seq((c) => vectorise(ad...
        #pragma unroll
        for (int i_6 = 0; i_6 < 4; i_6++) {  // map_seq((ra) => map_seq((c) => vectorise(add_mult, 8)(get(0) << c, ...
          #pragma unroll
          for (int i_7 = 0; i_7 < 2; i_7++) {  // map_seq((c) => vectorise(add_mult, 8)(get(0) << c, bcast8_float << ...
            acc_1[2*i_6 + i_7] = add_mult_v8(acc_1[2*i_6 + i_7], bcast8_float(tmp_2[2048*gl_8 + i_5 + 512*i_6]), ((global float8*)tmp_3)[1024*gl_9 + 2*i_5 + i_7]);  // vectorise(add_mult, 8)
          }
        }
      }
      #pragma unroll
      for (int i_8 = 0; i_8 < 4; i_8++) {  // map_seq(map_seq(vectorise(id, 8)))
        #pragma unroll
        for (int i_9 = 0; i_9 < 2; i_9++) {  // map_seq(vectorise(id, 8))
          ((global float8*)tmp_4)[128*gl_8 + 2*gl_9 + 32*i_8 + i_9] = id_v8(acc_1[2*i_8 + i_9]);  // vectorise(id, 8)
        }
      }
    }
  }
}

// (t, w2, b2) => map_glb((p) => map_glb((q) => bias_relu(get(1) << q, get(1) << get(0) << q)) << zi...
kernel void lift_kernel_5(const global float* restrict b2,
    global float* restrict tmp_4,
    global float* restrict tmp_5) {
  {  // map_glb((p) => map_glb((q) => bias_relu(get(1) << q, get(1) << get(...: one iteration per work-item
    int gl_10 = get_global_id(1);
    {  // map_glb((q) => bias_relu(get(1) << q, get(1) << get(0) << q)): one iteration per work-item
      int gl_11 = get_global_id(0);
      tmp_5[256*gl_10 + gl_11] = bias_relu(tmp_4[256*gl_10 + gl_11], b2[gl_11]);  // bias_relu
    }
  }
}

// (pb) => transpose_w << map_glb((row) => split(16) << as_scalar << map_glb(to_global(vectorise(id,...
kernel void lift_kernel_6(const global float* restrict w3,
    global float* restrict tmp_6) {
  {  // map_glb((row) => split(16) << as_scalar << map_glb(to_global(vector...: one iteration per work-item
    int gl_12 = get_global_id(1);
    {  // map_glb(to_global(vectorise(id, 8))): one iteration per work-item
      int gl_13 = get_global_id(0);
      ((global float8*)tmp_6)[2*gl_12 + gl_13 + 510*(gl_13 / 2)] = id_v8((float8)(w3[gl_12 + 2048*gl_13], w3[gl_12 + 2048*gl_13 + 256], w3[gl_12 + 2048*gl_13 + 512], w3[gl_12 + 2048*gl_13 + 768], w3[gl_12 + 2048*gl_13 + 1024], w3[gl_12 + 2048*gl_13 + 1280], w3[gl_12 + 2048*gl_13 + 1536], w3[gl_12 + 2048*gl_13 + 1792]));  // vectorise(id, 8)
    }
  }
}

// (ta, tx) => join << map_glb((as) => map(join) << transpose << map_glb((xs) => map(as_scalar) << t...
kernel void lift_main(global float* restrict tmp_5,
    global float* restrict tmp_6,
    global float* restrict tmp_7) {
  {  // map_glb((as) => map(join) << transpose << map_glb((xs) => map(as_sc...: one iteration per work-item
    int gl_14 = get_global_id(1);
    {  // map_glb((xs) => map(as_scalar) << to_global(map_seq(map_seq(vectori...: one iteration per work-item
      int gl_15 = get_global_id(0);
      float8 acc_2[8];  // acc for [[<Float>8]2]4
      #pragma unroll
      for (int c_4 = 0; c_4 < 4; c_4++) {  // copy (initial value)
        #pragma unroll
        for (int c_5 = 0; c_5 < 2; c_5++) {  // copy (initial value)
          acc_2[2*c_4 + c_5] = (float8)(0.0f);  // initial value
        }
      }
      for (int i_10 = 0; i_10 < 256; i_10++) {  // reduce_seq((acc, ab) => map_seq((ra) => map_seq((c) => vectorise(ad...
        #pragma unroll
        for (int i_11 = 0; i_11 < 4; i_11++) {  // map_seq((ra) => map_seq((c) => vectorise(add_mult, 8)(get(0) << c, ...
          #pragma unroll
          for (int i_12 = 0; i_12 < 2; i_12++) {  // map_seq((c) => vectorise(add_mult, 8)(get(0) << c, bcast8_float << ...
            acc_2[2*i_11 + i_12] = add_mult_v8(acc_2[2*i_11 + i_12], bcast8_float(tmp_5[1024*gl_14 + i_10 + 256*i_11]), ((global float8*)tmp_6)[512*gl_15 + 2*i_10 + i_12]);  // vectorise(add_mult, 8)
          }
        }
      }
      #pragma unroll
      for (int i_13 = 0; i_13 < 4; i_13++) {  // map_seq(map_seq(vectorise(id, 8)))
        #pragma unroll
        for (int i_14 = 0; i_14 < 2; i_14++) {  // map_seq(vectorise(id, 8))
          ((global float8*)tmp_7)[64*gl_14 + 2*gl_15 + 16*i_13 + i_14] = id_v8(acc_2[2*i_13 + i_14]);  // vectorise(id, 8)
        }
      }
    }
  }
}

// (t, w3, b3) => map_glb((p) => map_glb((q) => bias_relu(get(1) << q, get(1) << get(0) << q)) << zi...
kernel void lift_kernel_7(const global float* restrict b3,
    global float* restrict out,
    global float* restrict tmp_7) {
  {  // map_glb((p) => map_glb((q) => bias_relu(get(1) << q, get(1) << get(...: one iteration per work-item
    int gl_16 = get_global_id(1);
    {  // map_glb((q) => bias_relu(get(1) << q, get(1) << get(0) << q)): one iteration per work-item
      int gl_17 = get_global_id(0);
      out[128*gl_16 + gl_17] = bias_relu(tmp_7[128*gl_16 + gl_17], b3[gl_17]);  // bias_relu
    }
  }
}
