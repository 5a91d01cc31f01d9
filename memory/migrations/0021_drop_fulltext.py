"""Drop the full-text table of 0011: Memoria finds a page by its words in the relevance core's
keyword list (memory/engine/relevance.py TurnRelevance.page_keyword_scores), and nothing else
read it.
Going back creates it again, filled from the stored pages, as 0011 did."""

import importlib

from django.db import migrations

_0011 = importlib.import_module("memory.migrations.0011_memoria_recall")


class Migration(migrations.Migration):

    dependencies = [
        ('memory', '0020_page_pinned_index'),
    ]

    operations = [
        migrations.RunPython(_0011.fulltext_drop, _0011.fulltext_create),
    ]
