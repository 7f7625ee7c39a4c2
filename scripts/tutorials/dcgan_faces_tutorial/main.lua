-- pytorch/tutorials beginner_source/dcgan_faces_tutorial.py ported to nnrepl: a DCGAN trained
-- on the CelebA faces (the networks are in model.lua beside this file).
--
--   nnrepl scripts/tutorials/dcgan_faces_tutorial/main.lua [--dataroot data/celeba]
--       [--num_epochs 5] [--batch_size 128] [--workers 2] [--nz 100] [--ngf 64] [--ndf 64]
--
-- Same prints as the tutorial: the seed, both networks, "Starting Training Loop..." and the
-- "[epoch/num_epochs][i/len]\tLoss_D: ..." line every 50 batches. Differences:
-- * nothing is downloaded: extract img_align_celeba.zip so that the images are in
--   DATAROOT/img_align_celeba/*.jpg (ImageFolder needs the subfolder); a missing or empty
--   folder stops with ImageFolder's error naming it.
-- * the tutorial's inputs (dataroot, workers, batch_size, nz, ngf, ndf, num_epochs) can be
--   set by the flags above (new; the defaults are the tutorial's), to run it small.
-- * no matplotlib: the plot of training images is written to training_images.png, the loss
--   plot is a printed summary line, the animation of img_list is dropped, and the final
--   real / fake comparison is written to real_images.png and fake_images.png.
-- * the networks take nz, ngf, ndf and nc as constructor arguments (Python reads globals).
local argparse = require "argparse"
local torchvision = require "torchvision"
local random = require "random"
local dset = torchvision.datasets
local transforms = torchvision.transforms
local vutils = torchvision.utils
local model = require "model"
local weights_init, Generator, Discriminator = model.weights_init, model.Generator, model.Discriminator

local parser = argparse.ArgumentParser()
parser:add_argument("--dataroot", { default = "data/celeba" })
parser:add_argument("--workers", { type = "int", default = 2 })
parser:add_argument("--batch_size", { type = "int", default = 128 })
parser:add_argument("--nz", { type = "int", default = 100 })
parser:add_argument("--ngf", { type = "int", default = 64 })
parser:add_argument("--ndf", { type = "int", default = 64 })
parser:add_argument("--num_epochs", { type = "int", default = 5 })
local args = parser:parse_args()

-- the random seed, for reproducibility
local manualSeed = 999
-- manualSeed = random.randint(1, 10000) -- for new results each run
print(string.format("Random Seed:  %d", manualSeed)) -- Python's print("Random Seed: ", n)
random.seed(manualSeed)
torch.manual_seed(manualSeed)

-- Inputs
local dataroot = args.dataroot        -- root folder of the dataset
local workers = args.workers          -- DataLoader workers
local batch_size = args.batch_size    -- batch size during training
local image_size = 64                 -- images are resized to this
local nc = 3                          -- channels of the training images
local nz = args.nz                    -- size of the latent vector z
local ngf = args.ngf                  -- feature maps in the generator
local ndf = args.ndf                  -- feature maps in the discriminator
local num_epochs = args.num_epochs    -- training epochs
local lr = 0.0002                     -- learning rate of both optimizers
local beta1 = 0.5                     -- Adam's beta1
local ngpu = 1                        -- GPUs to use; 0: the CPU

-- Data: the image folder dataset
local dataset = dset.ImageFolder({ root = dataroot,
  transform = transforms.Compose({
    transforms.Resize(image_size),
    transforms.CenterCrop(image_size),
    transforms.ToTensor(),
    transforms.Normalize({ 0.5, 0.5, 0.5 }, { 0.5, 0.5, 0.5 }),
  }) })
-- the dataloader
local dataloader = torch.utils.data.DataLoader(dataset, { batch_size = batch_size,
  shuffle = true, num_workers = workers })

-- list(range(n)): the GPU ids 0 .. n-1
local function range(n)
  local ids = {}
  for k = 0, n - 1 do ids[#ids + 1] = k end
  return ids
end

-- the device to run on
local device = torch.device((torch.cuda.is_available() and ngpu > 0) and "cuda:0" or "cpu")

-- some training images (plotted in the tutorial)
local real_batch = table.pack(dataloader:iter()())
vutils.save_image(vutils.make_grid(real_batch[1]:to(device)[":64"], { padding = 2, normalize = true }):cpu(),
  "training_images.png")

-- the generator
local netG = Generator(ngpu, nz, ngf, nc):to(device)

-- several GPUs
if device.type == "cuda" and ngpu > 1 then
  netG = nn.DataParallel(netG, range(ngpu))
end

-- weights from N(0, 0.02) (BatchNorm's weight from N(1, 0.02))
netG:apply(weights_init)

print(netG)

-- the discriminator
local netD = Discriminator(ngpu, ndf, nc):to(device)

if device.type == "cuda" and ngpu > 1 then
  netD = nn.DataParallel(netD, range(ngpu))
end

netD:apply(weights_init)

print(netD)

-- the BCELoss
local criterion = nn.BCELoss()

-- latent vectors to watch the generator's progress
local fixed_noise = torch.randn(64, nz, 1, 1, { device = device })

-- the labels of real and fake images
local real_label = 1.
local fake_label = 0.

-- Adam for G and D
local optimizerD = optim.Adam(netD:parameters(), { lr = lr, betas = { beta1, 0.999 } })
local optimizerG = optim.Adam(netG:parameters(), { lr = lr, betas = { beta1, 0.999 } })

-- Training Loop
local img_list = {}
local G_losses = {}
local D_losses = {}
local iters = 0

print("Starting Training Loop...")
for epoch = 0, num_epochs - 1 do
  for i, data in dataloader:enumerate(0) do -- data: data[0] of Python's (images, labels)
    ------------------------------------------------------------
    -- (1) Update D: maximize log(D(x)) + log(1 - D(G(z)))
    ------------------------------------------------------------
    -- a batch of real images
    netD:zero_grad()
    local real_cpu = data:to(device)
    local b_size = real_cpu:size(0)
    local label = torch.full({ b_size }, real_label, { dtype = torch.float, device = device })
    -- D on the real batch
    local output = netD(real_cpu):view(-1)
    -- its loss
    local errD_real = criterion(output, label)
    -- D's gradients
    errD_real:backward()
    local D_x = output:mean():item()

    -- a batch of fakes
    local noise = torch.randn(b_size, nz, 1, 1, { device = device })
    local fake = netG(noise)
    label:fill_(fake_label)
    -- D on the fakes
    output = netD(fake:detach()):view(-1)
    local errD_fake = criterion(output, label)
    -- accumulated onto the real batch's gradients
    errD_fake:backward()
    local D_G_z1 = output:mean():item()
    local errD = errD_real + errD_fake
    optimizerD:step()

    ------------------------------------------------------------
    -- (2) Update G: maximize log(D(G(z)))
    ------------------------------------------------------------
    netG:zero_grad()
    label:fill_(real_label) -- the generator's cost takes its fakes as real
    -- D was just updated: classify the fakes again
    output = netD(fake):view(-1)
    local errG = criterion(output, label)
    errG:backward()
    local D_G_z2 = output:mean():item()
    optimizerG:step()

    -- training statistics
    if i % 50 == 0 then
      print(string.format("[%d/%d][%d/%d]\tLoss_D: %.4f\tLoss_G: %.4f\tD(x): %.4f\tD(G(z)): %.4f / %.4f",
        epoch, num_epochs, i, #dataloader,
        errD:item(), errG:item(), D_x, D_G_z1, D_G_z2))
    end

    -- the losses, for the plot
    G_losses[#G_losses + 1] = errG:item()
    D_losses[#D_losses + 1] = errD:item()

    -- G's output on fixed_noise
    if (iters % 500 == 0) or ((epoch == num_epochs - 1) and (i == #dataloader - 1)) then
      do
        local _ <close> = torch.no_grad()
        fake = netG(fixed_noise):detach():cpu()
      end
      img_list[#img_list + 1] = vutils.make_grid(fake, { padding = 2, normalize = true })
    end

    iters = iters + 1
  end
end

-- Results. The plot of the losses against the iterations, summed up:
print(string.format("Generator and Discriminator Loss During Training: %d iterations, G %.4f -> %.4f, D %.4f -> %.4f",
  #G_losses, G_losses[1], G_losses[#G_losses], D_losses[1], D_losses[#D_losses]))

-- (the animation of img_list is dropped)

-- real images next to the fakes of the last epoch
real_batch = table.pack(dataloader:iter()())
vutils.save_image(vutils.make_grid(real_batch[1]:to(device)[":64"], { padding = 5, normalize = true }):cpu(),
  "real_images.png")
vutils.save_image(img_list[#img_list], "fake_images.png")
