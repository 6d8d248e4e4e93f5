"""The one exception type of the training helpers."""


class TrainkitError(Exception):
    """Something a user can fix; the message says what happened and what to do about it.

    A training script that uses TrainingSession prints it as one ``error: ...`` line and exits
    with status 2, without a traceback.
    """
