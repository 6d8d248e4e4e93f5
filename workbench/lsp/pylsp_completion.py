"""A python-lsp-server plugin (entry point ``pylsp``): jedi's completions as pylsp's own
``jedi_completion`` gives them, with the item kind worked out only for the first entries.

jedi finds the 1,173 names of ``torch.`` in about 200 ms, but the kind of each (function, class,
module …) costs it a lookup in the interpreter it inspects: another 350 ms or more for the whole
list, while the list on screen shows a dozen. Here the first ``kinds_at_most`` entries, in the
order the list shows them (public names first, then alphabetical), get their kind; the others
are listed by name. Typing a letter more asks again, and jedi then lists only the names that
start with what is typed, so the names a person narrows the list to do get their kind.
"""

from __future__ import annotations

import pluggy

# pylsp's own marker, made here so that importing this module loads nothing of pylsp (it is only
# ever imported by pylsp itself, which has loaded it already).
hookimpl = pluggy.HookimplMarker("pylsp")

PLUGIN = "workbench_completion"
KINDS_AT_MOST = 100

# jedi's types as LSP's CompletionItemKind numbers (the specification's, as pylsp maps them).
_KINDS = {
    "module": 9,
    "namespace": 9,
    "class": 7,
    "instance": 18,
    "function": 3,
    "param": 6,
    "path": 17,
    "keyword": 14,
    "property": 10,
    "statement": 6,
}


def sort_text(name: str) -> str:
    """Public names before ``_private`` ones, each group alphabetical (pylsp's order)."""
    return ("z" if name.startswith("_") else "a") + name


@hookimpl
def pylsp_settings():
    # Off unless the client turns it on, so a pylsp that merely has Workbench installed beside
    # it keeps its own completion.
    return {"plugins": {PLUGIN: {"enabled": False, "kinds_at_most": KINDS_AT_MOST}}}


@hookimpl
def pylsp_completions(config, document, position):
    from pylsp import _utils

    settings = config.plugin_settings(PLUGIN, document_path=document.path)
    at_most = int(settings.get("kinds_at_most", KINDS_AT_MOST))
    code_position = _utils.position_to_jedi_linecolumn(document, position)
    code_position["fuzzy"] = bool(settings.get("fuzzy", False))
    found = document.jedi_script(use_document_path=True).complete(**code_position)
    if not found:
        return None
    entries = sorted(((sort_text(c.name), c) for c in found), key=lambda entry: entry[0])
    items = []
    for index, (order, completion) in enumerate(entries):
        item = {"label": completion.name, "sortText": order, "insertText": completion.name}
        if index < at_most:
            kind = _KINDS.get(completion.type)
            if kind is not None:
                item["kind"] = kind
        items.append(item)
    return items
