from workbench.launch import main

main()
