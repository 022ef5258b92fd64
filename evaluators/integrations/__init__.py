"""The suite's connections to other systems, above the stages they carry results of:
Langfuse (langfuse/: runs published as traces, scores and experiments, prompts managed by
label, production replies monitored) and Ray (scale/: heuristic scoring on a cluster).
"""
