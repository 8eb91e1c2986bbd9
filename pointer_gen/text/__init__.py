"""Text: words and ids, and raw text as tokens. Uses the base only.

  cjk         text written without spaces: the characters `--tokenizer=cjk` splits off, and
              its rule in plain Python for ROUGE
  ptb         `--tokenizer=ptb`: CoreNLP 3.7.0's PTBTokenizer as RE2 rewrites
  tokenizers  tokenisation as TensorFlow ops, shared by training and serving; how a summary's
              tokens are written back as text
  vocab       the original's vocab file and the `.tokenization.json` beside it
"""
