"""The rubric: one YAML file (rubric.yaml) that every scoring stage reads, its loader and
validator (loader.py), and the document rendered from it (doc.py -> docs/rubric.md).

Above core/ only: the rubric names what the stages above it score and decide.
"""
