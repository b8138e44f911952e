// swift-tools-version: 6.0
import PackageDescription

let strictSettings: [SwiftSetting] = [
  .enableUpcomingFeature("ExistentialAny"),
  .enableUpcomingFeature("MemberImportVisibility"),
  .enableUpcomingFeature("InternalImportsByDefault"),
]

let package = Package(
  name: "AppGroupMailbox",
  products: [
    .library(name: "AppGroupMailbox", targets: ["AppGroupMailbox"]),
    .executable(name: "mailboxctl", targets: ["mailboxctl"]),
  ],
  targets: [
    .target(name: "CMailboxShims"),
    .target(name: "CMailboxBaseline"),
    .target(name: "MailboxLocks", dependencies: ["CMailboxShims"], swiftSettings: strictSettings),
    .target(
      name: "AppGroupMailbox",
      dependencies: ["CMailboxShims", "MailboxLocks"],
      swiftSettings: strictSettings
    ),
    .executableTarget(
      name: "mailboxctl",
      dependencies: ["AppGroupMailbox", "MailboxLocks"],
      swiftSettings: strictSettings
    ),
    .executableTarget(
      name: "MailboxTestWorker",
      dependencies: ["AppGroupMailbox", "MailboxLocks"],
      swiftSettings: strictSettings
    ),
    .executableTarget(
      name: "mailbox-bench",
      dependencies: ["AppGroupMailbox", "CMailboxBaseline"],
      swiftSettings: strictSettings
    ),
    .testTarget(
      name: "AppGroupMailboxTests",
      dependencies: [
        "AppGroupMailbox", "MailboxLocks", "MailboxTestWorker", "mailboxctl", "mailbox-bench",
      ],
      swiftSettings: strictSettings
    ),
  ],
  swiftLanguageModes: [.v6]
)
