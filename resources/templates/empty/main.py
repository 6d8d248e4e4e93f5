"""The entry point of this project."""


def main() -> None:
    print("Hello from Workbench.")


if __name__ == "__main__":
    main()
