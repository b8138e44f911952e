print("mailboxctl")
