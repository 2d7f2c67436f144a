"""Everything that touches llama.cpp: vocabularies, models, sampling, generation."""
