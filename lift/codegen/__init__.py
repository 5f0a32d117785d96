"""Code generation: IR -> OpenCL C AST -> text, with the host plan (`lift.plan.KernelSource`).

    from lift.codegen import generate
    plan = generate(program, local_size=None, global_size=None)
"""

from lift.codegen.generate import build, generate

__all__ = ["generate", "build"]
