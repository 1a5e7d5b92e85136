"""The Hugging Face Hub: where a push goes, the HTTP client and its one-line errors, staging a
checkpoint, one push, the push queue, auto-push, pull, and whether weights are on the Hub.

Imports: the read wings (base .. render). Not launch, away or fleet.
"""
