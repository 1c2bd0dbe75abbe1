"""Django's SQLite backend, which also makes the database file's folder when it connects.

The default database and the test databases live in var/, which a fresh clone has not got:
`manage.py migrate`, the test run and a benchmark's throwaway database each find it made on
their first connection, and importing the settings creates nothing.
"""

from pathlib import Path

from django.db.backends.sqlite3 import base


class DatabaseWrapper(base.DatabaseWrapper):
    def get_new_connection(self, conn_params):
        name = str(conn_params["database"])
        if not self.creation.is_in_memory_db(name) and not name.startswith("file:"):
            Path(name).parent.mkdir(parents=True, exist_ok=True)
        return super().get_new_connection(conn_params)
