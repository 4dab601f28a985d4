"""Reproducible Windows process-creation events (Sysmon event 1 fields) for bench/sigma.py.

``make_events(m, seed, crafted)``: m events, mostly ordinary (realistic images with their parents, command
lines, version info, users, integrity levels, hashes); every ``share``-th event is one of ``crafted`` (events
built to match a Sigma rule), with a fresh host and time.
"""

from __future__ import annotations

import random

FIELDS = ["Image", "CommandLine", "ParentImage", "ParentCommandLine", "OriginalFileName", "User", "Description",
          "Product", "Company", "CurrentDirectory", "IntegrityLevel", "Hashes", "ParentUser", "FileVersion",
          "LogonId", "Provider_Name"]

S32 = "C:\\Windows\\System32\\"
PF = "C:\\Program Files\\"
# (image, original file name, description, product, company, command line templates, parents)
PROGRAMS = [
    (S32 + "svchost.exe", "svchost.exe", "Host Process for Windows Services", "Microsoft® Windows® Operating System",
     "Microsoft Corporation", ["{img} -k netsvcs -p -s Schedule", "{img} -k LocalService -p -s {svc}"],
     [S32 + "services.exe"]),
    (S32 + "conhost.exe", "CONHOST.EXE", "Console Window Host", "Microsoft® Windows® Operating System",
     "Microsoft Corporation", ["\\??\\C:\\Windows\\system32\\conhost.exe 0xffffffff -ForceV1"],
     [S32 + "cmd.exe", S32 + "WindowsPowerShell\\v1.0\\powershell.exe"]),
    (S32 + "cmd.exe", "Cmd.Exe", "Windows Command Processor", "Microsoft® Windows® Operating System",
     "Microsoft Corporation", ["{img} /c dir {dir}", "{img} /c \"{dir}\\build.bat\"", "{img} /c echo %PATH%"],
     ["C:\\Windows\\explorer.exe", PF + "Git\\bin\\bash.exe", S32 + "svchost.exe"]),
    (S32 + "WindowsPowerShell\\v1.0\\powershell.exe", "PowerShell.EXE", "Windows PowerShell",
     "Microsoft® Windows® Operating System", "Microsoft Corporation",
     ["{img} -NoProfile -File {dir}\\deploy.ps1", "{img} Get-ChildItem {dir}", "{img} -Command Get-Service {svc}"],
     ["C:\\Windows\\explorer.exe", S32 + "cmd.exe", PF + "Microsoft VS Code\\Code.exe"]),
    (PF + "Google\\Chrome\\Application\\chrome.exe", "chrome.exe", "Google Chrome", "Google Chrome", "Google LLC",
     ["\"{img}\" --type=renderer --lang=en-US --renderer-client-id={n}", "\"{img}\" https://example.com/{n}"],
     ["C:\\Windows\\explorer.exe", PF + "Google\\Chrome\\Application\\chrome.exe"]),
    (PF + "Microsoft Office\\root\\Office16\\OUTLOOK.EXE", "Outlook.exe", "Microsoft Outlook",
     "Microsoft Office", "Microsoft Corporation", ["\"{img}\" /recycle"], ["C:\\Windows\\explorer.exe"]),
    (S32 + "taskhostw.exe", "taskhostw.exe", "Host Process for Windows Tasks", "Microsoft® Windows® Operating System",
     "Microsoft Corporation", ["taskhostw.exe {{{n}}}"], [S32 + "svchost.exe"]),
    (PF + "Python311\\python.exe", "python.exe", "Python", "Python", "Python Software Foundation",
     ["\"{img}\" -m pytest {dir}", "\"{img}\" {dir}\\manage.py runserver"], [S32 + "cmd.exe"]),
    (S32 + "RuntimeBroker.exe", "RuntimeBroker.exe", "Runtime Broker", "Microsoft® Windows® Operating System",
     "Microsoft Corporation", ["{img} -Embedding"], [S32 + "svchost.exe"]),
    (PF + "Git\\cmd\\git.exe", "git.exe", "Git for Windows", "Git", "The Git Development Community",
     ["git status", "git fetch origin", "git log --oneline -n {n}"], [S32 + "cmd.exe", PF + "Microsoft VS Code\\Code.exe"]),
    (S32 + "msiexec.exe", "msiexec.exe", "Windows® installer", "Windows Installer - Unicode", "Microsoft Corporation",
     ["{img} /V", "{img} /i {dir}\\setup.msi /qn"], [S32 + "services.exe", "C:\\Windows\\explorer.exe"]),
    (S32 + "notepad.exe", "NOTEPAD.EXE", "Notepad", "Microsoft® Windows® Operating System", "Microsoft Corporation",
     ["\"{img}\" {dir}\\notes.txt"], ["C:\\Windows\\explorer.exe"]),
]
USERS = ["CORP\\alice", "CORP\\bob", "CORP\\svc_build", "NT AUTHORITY\\SYSTEM", "NT AUTHORITY\\LOCAL SERVICE"]
DIRS = ["C:\\Users\\alice\\Documents", "C:\\src\\app", "C:\\Users\\bob\\Downloads", "D:\\work"]
SERVICES = ["wuauserv", "BITS", "Dnscache", "EventLog", "Spooler"]
LEVELS = ["Medium", "High", "System"]


def make_events(m: int, seed: int, crafted: list[dict], share: int = 100) -> list[dict]:
    rng = random.Random(seed)
    out = []
    for i in range(m):
        if crafted and i % share == share - 1:
            e = {f: None for f in FIELDS}
            e.update({k: v for k, v in crafted[(i // share) % len(crafted)].items() if k in e})
            out.append(e)
            continue
        img, orig, desc, prod, comp, cmds, parents = rng.choice(PROGRAMS)
        d = rng.choice(DIRS)
        cmd = rng.choice(cmds).format(img=img, dir=d, n=rng.randint(1, 99999), svc=rng.choice(SERVICES))
        user = rng.choice(USERS)
        out.append({
            "Image": img, "CommandLine": cmd, "ParentImage": rng.choice(parents),
            "ParentCommandLine": None, "OriginalFileName": orig, "User": user, "Description": desc,
            "Product": prod, "Company": comp, "CurrentDirectory": d + "\\",
            "IntegrityLevel": "System" if user.startswith("NT ") else rng.choice(LEVELS[:2]),
            "Hashes": f"SHA256={rng.getrandbits(256):064X}", "ParentUser": user, "FileVersion": "10.0.19041.1",
            "LogonId": f"0x{rng.getrandbits(24):x}", "Provider_Name": "Microsoft-Windows-Sysmon"})
    return out
