from django.db import migrations, models
from django.db.models import Max, OuterRef, Subquery, Value
from django.db.models.functions import Coalesce


def count_existing_events(apps, schema_editor):
    AgentRun = apps.get_model("agent", "AgentRun")
    RunEvent = apps.get_model("agent", "RunEvent")
    last = (
        RunEvent.objects.filter(run=OuterRef("pk"))
        .values("run")
        .annotate(top=Max("seq"))
        .values("top")
    )
    AgentRun.objects.update(last_event_seq=Coalesce(Subquery(last), Value(0)))


class Migration(migrations.Migration):
    dependencies = [
        ("agent", "0005_toolcalllog_full_result"),
    ]

    operations = [
        migrations.AddField(
            model_name="agentrun",
            name="last_event_seq",
            field=models.PositiveIntegerField(default=0),
        ),
        migrations.RunPython(count_existing_events, migrations.RunPython.noop),
    ]
