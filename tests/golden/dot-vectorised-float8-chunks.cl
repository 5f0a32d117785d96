typedef struct { float8 _0; float8 _1; } Tuple_float8_float8;

float8 madd_v8(float8 acc, float8 a, float8 b) {
  return acc + a * b;
}

float add(float x, float y) {
  return x + y;
}

// (xv, yv) => map_glb[chunks](to_global((chunk) => reduce_seq((acc, p) => vectorise(madd, 8)(acc, g...
kernel void chunks(const global float* restrict x,
    const global float* restrict y,
    global float* restrict tmp,
    int N) {
  {  // map_glb[chunks](to_global((chunk) => reduce_seq((acc, p) => vectori...: one iteration per work-item
    int gl_chunks = get_global_id(0);
    float8 acc;  // acc for <Float>8
    acc = (float8)(0.0f);  // initial value
    for (int i = 0; i < 256; i++) {  // reduce_seq((acc, p) => vectorise(madd, 8)(acc, get(0) << p, get(1) ...
      acc = madd_v8(acc, ((global float8*)x)[256*gl_chunks + i], ((global float8*)y)[256*gl_chunks + i]);  // vectorise(madd, 8)
    }
    ((global float8*)tmp)[gl_chunks] = acc;  // reduction result
  }
}

// (parts) => reduce_seq[lanes](add, 0.0) << as_scalar << parts
kernel void lane_sum(global float* restrict out,
    global float* restrict tmp,
    int N) {
  float acc_1;  // acc for Float
  acc_1 = 0.0f;  // initial value
  for (int i_lanes = 0; i_lanes < N / 256; i_lanes++) {  // reduce_seq[lanes](add)
    acc_1 = add(acc_1, tmp[i_lanes]);  // add
  }
  out[0] = acc_1;  // reduction result
}
