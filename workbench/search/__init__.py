"""Finding things in a project: Quick Open's kept file list and ranking (``file_index``,
``fuzzy``), and, beside them, Find in Files. Qt-free; the dialogs and docks are in ``widgets``."""
