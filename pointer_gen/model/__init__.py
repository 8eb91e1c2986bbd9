"""The model and its loss. Uses the base, text and attention; never data or training.

  model_config       the model's sizes and switches: one value the model and its cell hold
  layers             the Keras layers: encoder, reduce-state, attention, decoder cell
  pointer_generator  the pointer-generator: embedding, encoder, decoder loop
  losses             masked NLL (pointer or baseline form) and the coverage loss
"""
