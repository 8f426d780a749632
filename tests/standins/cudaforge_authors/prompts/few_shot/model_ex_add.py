class Model: pass  # stand-in few-shot base
