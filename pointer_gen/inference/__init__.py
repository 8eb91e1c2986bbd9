"""Inference: a trained model's summaries, scores and exports. Uses every layer below it.

  metrics           ROUGE with intervals, n-gram figures (no TensorFlow)
  reference_scores  `--score_references`: the model's score of each reference summary, as
                    training's loss
  attention_view    a summary's attention as decode's JSON record and as a picture (its text in
                    Pillow's bundled font)
  summaries         a search's result as words and figures: the compiled search of a batch,
                    single-pass batches as articles, a summary's words, the references
                    tokenised as the articles, n-gram figures (decode, the Python API, eval's
                    samples and tools/lead_baseline.py use it)
  decode            `--mode=decode`: single-pass with ROUGE, or endless with attention
  eval_samples      `--eval_samples`: eval's decoded articles for TensorBoard, handed to evaluate
                    by the entry point
  export            `--mode=export`: a self-contained SavedModel, raw text to summaries
"""
