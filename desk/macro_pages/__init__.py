"""The desk's page for macros (DESIGN §19): supervisors write shared macros, their language
versions and suggested actions, and preview them on a real ticket; everyone else reads them."""
