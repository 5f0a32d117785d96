float add(float x, float y) {
  return x + y;
}

// map_glb((xs) => reduce_seq(add, 0.0) << xs) << x
kernel void lift_kernel(const global float* restrict x,
    global float* restrict out,
    int M,
    int N) {
  {  // map_glb((xs) => reduce_seq(add, 0.0) << xs): one iteration per work-item
    int gl = get_global_id(0);
    float acc;  // acc for Float
    acc = 0.0f;  // initial value
    for (int i = 0; i < N; i++) {  // reduce_seq(add)
      acc = add(acc, x[N*gl + i]);  // add
    }
    out[gl] = acc;  // reduction result
  }
}
