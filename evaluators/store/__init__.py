"""The run store: runs/<run-id>/ keeps everything a run produced (run_store.py), in records
every later stage reads (records.py: cases and their turns), with flat pandas exports
(frames.py).
"""
