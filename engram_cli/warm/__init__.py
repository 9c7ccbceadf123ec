"""The warm path of the per-prompt hook: a small local service that keeps engram loaded.

A per-prompt hook is a whole process per prompt, and a cold one pays for Python, onnxruntime and
the model on every prompt. ``engram hooks serve`` keeps them loaded and answers the hook over a
private Unix socket; the hook (``engram_cli.launch``) asks it first and runs the command itself
when there is no answer. The service runs the very command the hook would have run, in the hook's
working directory and environment, and hands back the bytes of its stdout and stderr and its exit
code: what the assistant receives is the same either way.

``locate`` says where a service's socket is (light: the hook imports it), ``protocol`` is the
wire format, ``client`` the hook's side and ``server`` the service's loop. Nothing here imports
the engine or the CLI: the service is handed the command to run.
"""
