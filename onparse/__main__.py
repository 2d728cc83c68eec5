from onparse.cli import main

main()
