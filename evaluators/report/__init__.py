"""Reports a person reads: the release decisions on the terminal (terminal), as pandas frames
and files (frames) and as one self-contained HTML page (html, with its SVG charts and voice
panel); a scored reply's card (score_card), a run's per-version tables (run_tables) and the
judge's agreement with people (agreement_tables); and the terminal's tables and consoles
(console) and the short keys and level colours every report shares (labels).

Nothing is imported here, so a command loads only the report it prints.
"""
