typedef struct { float8 _0; float8 _1; } Tuple_float8_float8;

float8 mult(float8 x, float8 y) {
  return x * y;
}

float8 add(float8 x, float8 y) {
  return x + y;
}

float hsum8(float8 v) {
  return v.s0 + v.s1 + (v.s2 + v.s3) + (v.s4 + v.s5 + (v.s6 + v.s7));
}

// map_glb[rows](to_global((row) => hsum8 << reduce_seq((acc, p) => add(acc, mult(get(0) << p, get(1...
kernel void lift_kernel(const global float* restrict a,
    const global float* restrict v,
    global float* restrict out,
    int M,
    int N) {
  {  // map_glb[rows](to_global((row) => hsum8 << reduce_seq((acc, p) => ad...: one iteration per work-item
    int gl_rows = get_global_id(0);
    float8 acc;  // acc for <Float>8
    acc = (float8)(0.0f);  // initial value
    for (int i = 0; i < N / 8; i++) {  // reduce_seq((acc, p) => add(acc, mult(get(0) << p, get(1) << p)))
      acc = add(acc, mult(((global float8*)a)[i + N*gl_rows / 8], ((global float8*)v)[i]));  // add
    }
    out[gl_rows] = hsum8(acc);  // hsum8
  }
}
