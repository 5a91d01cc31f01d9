"""Every stored segment re-addressed into the page-tree format (engine/page_list.py): its block
links to a tree of chunks instead of naming every page. The CIDs it had stay as aliases.

This calls the graph's service (the re-addressing is the service's, not a copy of it), so it
needs the graph's tables as of 0025; a later change to them must keep this migration running."""

from django.db import migrations


def segments_readdress(apps, schema_editor):
    from memory.services import graph

    MemoryNode = apps.get_model("memory", "MemoryNode")
    users = MemoryNode.objects.filter(kind="segment").values_list("user_id", flat=True).distinct()
    for user_id in list(users):
        pks = list(MemoryNode.objects.filter(user_id=user_id, kind="segment").exclude(block=b"")
                   .values_list("pk", flat=True))
        graph.nodes_readdress(user_id=user_id, node_pks=pks)


class Migration(migrations.Migration):

    dependencies = [("memory", "0025_page_chunks"), ("persona", "0005_long_term_profile_name")]

    operations = [migrations.RunPython(segments_readdress, migrations.RunPython.noop)]
