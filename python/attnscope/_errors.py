"""attnscope's exceptions: the engine's one-line messages, which name the file and the problem."""


class Error(ValueError):
    """What attnscope refuses: a file it cannot read, an input of the wrong kind, an option out of range."""


class FileNotFound(Error, FileNotFoundError):
    """A file or folder given to attnscope that is not there (also a FileNotFoundError)."""

    def __str__(self):
        # OSError's __str__ would print the errno form; the engine's message already names the file.
        return str(self.args[0]) if self.args else ""
