typedef struct { float _0; float _1; } Tuple_float_float;

typedef struct { float8 _0; float8 _1; } Tuple_float8_float8;

float8 add_v8(float8 x, float8 y) {
  return x + y;
}

float lane_sum8_float(float8 v) {
  return (((v.s0 + v.s1) + (v.s2 + v.s3)) + ((v.s4 + v.s5) + (v.s6 + v.s7)));
}

float max_(float x, float y) {
  return (x > y || x != x) ? x : y;
}

float add(float x, float y) {
  return x + y;
}

// (k0) => map_glb((chunk) => lane_sum8_float << reduce_seq((acc, e) => vectorise(add, 8)(acc, vecto...
kernel void lift_kernel(const global float* restrict a,
    const global float* restrict b,
    global float* restrict tmp) {
  {  // map_glb((chunk) => lane_sum8_float << reduce_seq((acc, e) => vector...: one iteration per work-item
    int gl = get_global_id(0);
    float8 acc;  // acc for <Float>8
    acc = (float8)(0.0f);  // initial value
    #pragma unroll
    for (int i = 0; i < 16; i++) {  // reduce_seq((acc, e) => vectorise(add, 8)(acc, vectorise(add, 8)(get...
      acc = add_v8(acc, add_v8(((global float8*)a)[16*gl + i], ((global float8*)b)[16*gl + i]));  // vectorise(add, 8)
    }
    tmp[gl] = lane_sum8_float(acc);  // lane_sum8_float
  }
}

// (k0) => reduce_seq(max_, -inf) << k0
kernel void lift_kernel_1(const global float* restrict c,
    global float* restrict tmp_1) {
  float acc_1;  // acc for Float
  acc_1 = -INFINITY;  // initial value
  #pragma unroll
  for (int i_1 = 0; i_1 < 1; i_1++) {  // reduce_seq(max_)
    acc_1 = max_(acc_1, c[i_1 + 2175]);  // max_
  }
  tmp_1[0] = acc_1;  // reduction result
}

// (k0) => map_glb((chunk) => reduce_seq(max_, -inf) << chunk) << k0
kernel void lift_kernel_2(const global float* restrict c,
    global float* restrict tmp_2) {
  {  // map_glb((chunk) => reduce_seq(max_, -inf) << chunk): one iteration per work-item
    int gl_1 = get_global_id(0);
    float acc_2;  // acc for Float
    acc_2 = -INFINITY;  // initial value
    #pragma unroll
    for (int i_2 = 0; i_2 < 3; i_2++) {  // reduce_seq(max_)
      acc_2 = max_(acc_2, c[3*gl_1 + i_2]);  // max_
    }
    tmp_2[gl_1] = acc_2;  // reduction result
  }
}

// (k0, k1, k2) => tuple(reduce_seq(add, 0.0) << k0, reduce_seq(max_, k1) << k2)
kernel void lift_kernel_3(global float* restrict out_0,
    global float* restrict out_1,
    global float* restrict tmp,
    global float* restrict tmp_1,
    global float* restrict tmp_2) {
  for (int task = get_global_id(0); task < 2; task += get_global_size(0)) {  // the result tuple's sequential components, one work-item each
    if (task == 0) {  // result component 0
      float acc_3;  // acc for Float
      acc_3 = 0.0f;  // initial value
      #pragma unroll
      for (int i_3 = 0; i_3 < 8; i_3++) {  // reduce_seq(add)
        acc_3 = add(acc_3, tmp[i_3]);  // add
      }
      out_0[0] = acc_3;  // reduction result
    }
    if (task == 1) {  // result component 1
      float acc_4;  // acc for Float
      acc_4 = tmp_1[0];  // initial value
      for (int i_4 = 0; i_4 < 725; i_4++) {  // reduce_seq(max_)
        acc_4 = max_(acc_4, tmp_2[i_4]);  // max_
      }
      out_1[0] = acc_4;  // reduction result
    }
  }
}
