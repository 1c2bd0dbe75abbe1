import gc
import os

from django.core.asgi import get_asgi_application

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")
application = get_asgi_application()

# What is loaded by now lives as long as the process: keep it out of the collector's full
# passes, which otherwise stall every open stream of the process while they run (100 ms and
# more with a thousand streams open).
gc.freeze()
