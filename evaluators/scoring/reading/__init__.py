"""How the scorer reads a text, once per text and shared by every signal: the spaCy parse
(nlp), the rubric's lexicons (matchers), sentence vectors (meaning), tone (sentiment),
syllables and reading ease (readability, offline), the language (language), what a stream
has already read (text_cache), and the features and turn fit every signal reads.
"""
