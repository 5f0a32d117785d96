typedef struct { float _0; float _1; } Tuple_float_float;

float mult(float a, float b) {
  return a * b;
}

float add(float x, float y) {
  return x + y;
}

// reduce_seq((acc, a) => add(acc, mult(get(0) << a, get(1) << a)), 0.0) << zip(x, y)
kernel void lift_kernel(const global float* restrict x,
    const global float* restrict y,
    global float* restrict out,
    int N) {
  float acc;  // acc for Float
  acc = 0.0f;  // initial value
  for (int i = 0; i < N; i++) {  // reduce_seq((acc, a) => add(acc, mult(get(0) << a, get(1) << a)))
    acc = add(acc, mult(x[i], y[i]));  // add
  }
  out[0] = acc;  // reduction result
}
