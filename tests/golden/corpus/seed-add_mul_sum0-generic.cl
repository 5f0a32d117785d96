float add_mul(float x, float a, float b) {
  return (x + a) * b;
}

float add(float x, float y) {
  return x + y;
}

// split(W) << map_glb((t) => reduce_seq((acc, a) => add(acc, add_mul(a, get(1) << t, get(2) << t)),...
kernel void lift_kernel(const global float* restrict x,
    const global float* restrict a,
    const global float* restrict bb,
    global float* restrict out,
    int B,
    int H,
    int W) {
  {  // map_glb((t) => reduce_seq((acc, a) => add(acc, add_mul(a, get(1) <<...: one iteration per work-item
    int gl = get_global_id(0);
    float acc;  // acc for Float
    acc = 0.0f;  // initial value
    for (int i = 0; i < B; i++) {  // reduce_seq((acc, a) => add(acc, add_mul(a, get(1) << t, get(2) << t)))
      acc = add(acc, add_mul(x[H*W*i + gl], a[gl], bb[gl]));  // add
    }
    out[gl] = acc;  // reduction result
  }
}
