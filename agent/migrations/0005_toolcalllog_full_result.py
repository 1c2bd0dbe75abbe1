from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [
        ("agent", "0004_mcp_session"),
    ]

    operations = [
        migrations.AddField(
            model_name="toolcalllog",
            name="full_result",
            field=models.TextField(blank=True),
        ),
    ]
